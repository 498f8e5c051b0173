import { afterEach, describe, expect, it } from 'vitest'
import { connect, type ClientHttp2Session } from 'node:http2'
import Fastify from 'fastify'
import { createSharedStore, httpCache, type HttpCacheOptions } from '@spindle/cache'

// HTTP/2 clients name the host in :authority and send no Host header.

let app: { close: () => Promise<unknown> } | undefined
let session: ClientHttp2Session | undefined
afterEach(async () => {
  session?.close()
  session = undefined
  await app?.close()
  app = undefined
})

async function start (options: HttpCacheOptions = {}): Promise<string> {
  const server = Fastify({ http2: true })
  app = server
  await server.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024 }), ...options })
  let n = 0
  server.get('/page', async (req, reply) => {
    reply.header('cache-control', 'max-age=60')
    return `<link rel=canonical href="https://${req.host}/page"> ${++n}`
  })
  return await server.listen({ port: 0, host: '127.0.0.1' })
}

function get (url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number, cache: unknown, body: string }> {
  session ??= connect(url)
  return new Promise((resolve, reject) => {
    const stream = session!.request({ ':path': path, ...headers })
    let status = 0
    let cache: unknown
    let body = ''
    stream.on('response', (h) => { status = Number(h[':status']); cache = h['x-cache'] })
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => { body += chunk })
    stream.on('end', () => resolve({ status, cache, body }))
    stream.on('error', reject)
  })
}

describe('httpCache over HTTP/2', () => {
  it('keys each :authority apart: one host cannot fill the page of another', async () => {
    const url = await start()
    const evil = await get(url, '/page', { ':authority': 'evil.example' })
    expect(evil.body).toBe('<link rel=canonical href="https://evil.example/page"> 1')
    const app1 = await get(url, '/page', { ':authority': 'app.example' })
    expect(app1.cache).toBe('MISS')
    expect(app1.body).toBe('<link rel=canonical href="https://app.example/page"> 2')
    // A spelling the app would read otherwise is answered from the canonical entry and fills none.
    const upper = await get(url, '/page', { ':authority': 'APP.example' })
    expect(upper.body).toBe('<link rel=canonical href="https://app.example/page"> 2')
  })

  it('stores the body once: a hit is the page the route wrote, byte for byte', async () => {
    const url = await start()
    const first = await get(url, '/page', { ':authority': 'app.example' })
    const hit = await get(url, '/page', { ':authority': 'app.example' })
    expect(hit.cache).toBe('HIT')
    expect(hit.body).toBe(first.body)
  })

  it('checks allowedHosts against :authority', async () => {
    const url = await start({ allowedHosts: ['app.example'] })
    expect((await get(url, '/page', { ':authority': 'app.example' })).status).toBe(200)
    expect((await get(url, '/page', { ':authority': 'evil.example' })).status).toBe(400)
  })
})
