import { connect } from 'node:net'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { request } from 'undici'
import { createSharedStore, httpCache, type HttpCacheOptions } from '@spindle/cache'

export interface Started {
  app: FastifyInstance
  url: string
  /** How many times each route ran. */
  runs: Map<string, number>
}

/** A real Fastify server on 127.0.0.1:0 with httpCache (private store) registered before `routes`. */
export async function start (routes: (app: FastifyInstance, count: (name: string) => number) => void, options: HttpCacheOptions = {}, server: FastifyServerOptions = {}): Promise<Started> {
  const app = Fastify(server)
  const runs = new Map<string, number>()
  const count = (name: string): number => {
    const n = (runs.get(name) ?? 0) + 1
    runs.set(name, n)
    return n
  }
  await app.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024, maxTags: 256 }), ...options })
  routes(app, count)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, url, runs }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export interface Got { status: number, headers: Headers, text: string }

/**
 * One request with undici's plain client: unlike fetch it adds no headers of its own
 * (fetch adds Cache-Control: no-cache to conditional requests).
 */
export async function get (url: string, init: { method?: string, headers?: Record<string, string>, body?: string } = {}): Promise<Got> {
  const res = await request(url, { method: (init.method ?? 'GET') as 'GET', headers: init.headers, body: init.body, headersTimeout: 10_000, bodyTimeout: 10_000 })
  const headers = new Headers()
  for (const [name, value] of Object.entries(res.headers)) {
    for (const v of [value ?? []].flat()) headers.append(name, v)
  }
  return { status: res.statusCode, headers, text: await res.body.text() }
}

/**
 * One request written byte for byte (HTTP clients normalise the target, the Host and a
 * fragment themselves); the whole answer as latin1, 'ERR', or 'TIMEOUT' after 5 s. The text
 * must ask for `connection: close`.
 */
export function sendRaw (port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')))
    socket.on('error', () => resolve('ERR'))
    socket.setTimeout(5000, () => { socket.destroy(); resolve('TIMEOUT') })
    socket.write(text)
  })
}

/** The status, X-Cache, ETag and body of an answer sendRaw() returned. */
export function parseRaw (answer: string): { status: number, cache: string, etag: string, body: string } {
  const split = answer.indexOf('\r\n\r\n')
  const head = split < 0 ? answer : answer.slice(0, split)
  return {
    status: Number(head.split(' ')[1]),
    cache: /\r\nx-cache: (\w+)/i.exec(head)?.[1] ?? '',
    etag: /\r\netag: ([^\r]*)/i.exec(head)?.[1] ?? '',
    body: split < 0 ? '' : answer.slice(split + 4),
  }
}
