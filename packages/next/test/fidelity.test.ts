// The same requests, byte for byte, to `next start` and to the adapter in both forms
// (rendering in Fastify's thread, and in 2 pool threads): what a client sees of the answer
// (status line, repeated headers, redirects) and what the app sees of the request must not
// depend on which of them serves it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { nextAdapter } from '@spindle/next'
import { appDir, buildApp } from './fixtures/build.ts'
import { headerValues, rawRequest as raw, type RawAnswer } from '../../runtime/test/raw-http.ts'

async function freePort (): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const port = (probe.address() as { port: number }).port
  await new Promise((resolve) => probe.close(resolve))
  return port
}

let nextStart: ChildProcess | undefined
const servers: FastifyInstance[] = []
const ports: Record<string, number> = {}

beforeAll(async () => {
  buildApp()
  const nextBin = createRequire(join(appDir, 'package.json')).resolve('next/dist/bin/next')
  ports['next start'] = await freePort()
  nextStart = spawn(process.execPath, [nextBin, 'start', appDir, '-p', String(ports['next start']), '-H', '127.0.0.1'], {
    stdio: 'ignore', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
  })
  for (const threads of [0, 2]) {
    const name = `threads: ${threads}`
    const port = await freePort()
    const fastify = Fastify()
    servers.push(fastify)
    await fastify.register(nextAdapter, { dir: appDir, threads, hostname: '127.0.0.1', port, quiet: true })
    await fastify.listen({ port, host: '127.0.0.1' })
    ports[name] = port
  }
  for (let i = 0; ; i++) {
    const up = await raw(ports['next start'], 'GET /static HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n').catch(() => undefined)
    if (up?.statusLine.includes(' 200')) break
    if (i > 120) throw new Error('next start did not answer')
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}, 240_000)

afterAll(async () => {
  nextStart?.kill('SIGKILL')
  await Promise.all(servers.map((f) => f.close()))
})

/** The same request to each server. */
async function each (head: string): Promise<Record<string, RawAnswer>> {
  const out: Record<string, RawAnswer> = {}
  for (const [name, port] of Object.entries(ports)) out[name] = await raw(port, head)
  return out
}

describe('the adapter answers as next start does, in Fastify\'s thread and in pool threads', () => {
  it('keeps every value of a repeated response header, and a reason phrase of its own', async () => {
    const answers = await each('GET /api/multi HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    for (const [name, a] of Object.entries(answers)) {
      expect({ name, line: a.statusLine }).toEqual({ name, line: 'HTTP/1.1 201 Made It' })
      expect({ name, auth: headerValues(a, 'www-authenticate') }).toEqual({ name, auth: ['Basic realm="a"', 'Bearer realm="b"'] })
      expect({ name, link: headerValues(a, 'link') }).toEqual({ name, link: ['</a.css>; rel=preload; as=style', '</b.js>; rel=preload; as=script'] })
    }
  })

  it('gives the app the request headers Node would: no User-Agent where none was sent, the first of a repeated Authorization', async () => {
    const bare = await each('GET /api/request HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    const repeated = await each('GET /api/request HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: ua1\r\nUser-Agent: ua2\r\n' +
      'Authorization: Bearer one\r\nAuthorization: Bearer two\r\nCookie: a=1\r\nCookie: b=2\r\nAccept: text/html\r\nAccept: */*\r\nConnection: close\r\n\r\n')
    for (const name of Object.keys(ports)) {
      expect({ name, seen: JSON.parse(bare[name]!.body) }).toEqual({ name, seen: { userAgent: null, authorization: null, cookie: null, accept: null } })
      expect({ name, seen: JSON.parse(repeated[name]!.body) }).toEqual({
        name, seen: { userAgent: 'ua1', authorization: 'Bearer one', cookie: 'a=1; b=2', accept: 'text/html, */*' },
      })
    }
  })

  it('hands Next the request target as sent: a backslash gets Next\'s redirect to the clean path', async () => {
    for (const [target, location] of [['/api\\url', '/api/url'], ['/static\\', '/static/']]) {
      const answers = await each(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
      const expected = { line: answers['next start']!.statusLine, location: headerValues(answers['next start']!, 'location') }
      expect(expected.line).toMatch(/^HTTP\/1\.1 308/)
      expect(expected.location).toEqual([location])
      for (const [name, a] of Object.entries(answers)) {
        expect({ name, target, line: a.statusLine, location: headerValues(a, 'location') }).toEqual({ name, target, ...expected })
      }
    }
  })
})
