// What an app and its clients see must not depend on where the adapter renders: in
// Fastify's thread or in pool threads, the app gets the request headers Node's HTTP server
// gives (as react-router-serve's Express adapter does), the client gets the reason phrase
// the app chose and an event stream's head before its first event; in pool mode neither
// open event streams nor loaders that wait on I/O hold the pool's slots.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { once } from 'node:events'
import { connect } from 'node:net'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { reactRouterAdapter } from '@spindle/react-router'
import { buildApp, serverBuild } from './fixtures/build.ts'
import { renderPoolStats } from '@spindle/runtime/pool'
import { headerValues, rawRequest } from '../../runtime/test/raw-http.ts'

const servers: Record<string, { fastify: FastifyInstance, port: number }> = {}

beforeAll(async () => {
  buildApp()
  // threads: 1 with two renders at once, so that two open streams take every slot.
  for (const [name, options] of [['threads: 0', { threads: 0 }], ['threads: 2', { threads: 2 }], ['threads: 1', { threads: 1, threadConcurrency: 2 }]] as const) {
    const fastify = Fastify()
    await fastify.register(reactRouterAdapter, { build: serverBuild, ...options })
    await fastify.listen({ port: 0, host: '127.0.0.1' })
    servers[name] = { fastify, port: (fastify.server.address() as { port: number }).port }
  }
}, 240_000)

afterAll(async () => { await Promise.all(Object.values(servers).map((s) => s.fastify.close())) })

/** Opens an event stream and resolves with the response as soon as its head arrives. */
async function openStream (port: number, path: string): Promise<{ res: IncomingMessage, close: () => void }> {
  const req = httpRequest({ host: '127.0.0.1', port, path, agent: false })
  req.end()
  const [res] = await once(req, 'response') as [IncomingMessage]
  return { res, close: () => { req.destroy() } }
}

describe('reactRouterAdapter in Fastify\'s thread and in pool threads', () => {
  it('gives the app the request headers Node would, and the client the app\'s reason phrase', async () => {
    for (const name of ['threads: 0', 'threads: 2']) {
      const { port } = servers[name]!
      const bare = await rawRequest(port, 'GET /request-headers HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
      expect({ name, line: bare.statusLine }).toEqual({ name, line: 'HTTP/1.1 201 Made It' })
      expect({ name, seen: JSON.parse(bare.body) }).toEqual({ name, seen: { userAgent: null, authorization: null, cookie: null, accept: null } })
      const repeated = await rawRequest(port, 'GET /request-headers HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: ua1\r\nUser-Agent: ua2\r\n' +
        'Authorization: Bearer one\r\nAuthorization: Bearer two\r\nCookie: a=1\r\nCookie: b=2\r\nAccept: text/html\r\nAccept: */*\r\nConnection: close\r\n\r\n')
      expect({ name, seen: JSON.parse(repeated.body) }).toEqual({
        name, seen: { userAgent: 'ua1', authorization: 'Bearer one', cookie: 'a=1; b=2', accept: 'text/html, */*' },
      })
      expect(headerValues(repeated, 'content-type')).toEqual(['application/json'])
    }
  })

  it('sends an event stream\'s head at once, not with its first event 1.5 s later', async () => {
    for (const name of ['threads: 0', 'threads: 2']) {
      const started = Date.now()
      const { res, close } = await openStream(servers[name]!.port, '/events?first=1500')
      const headAfter = Date.now() - started
      close()
      expect({ name, status: res.statusCode, type: res.headers['content-type'] }).toEqual({ name, status: 200, type: 'text/event-stream' })
      expect({ name, early: headAfter < 1000 }).toEqual({ name, early: true })
    }
  })

  it('in pool mode, open event streams do not hold the slots: another request is answered at once', async () => {
    const { port } = servers['threads: 1']!
    // Four streams on a pool of two slots, each sending an event every second.
    const streams = await Promise.all(Array.from({ length: 4 }, () => openStream(port, '/events?first=100')))
    try {
      for (const s of streams) expect(s.res.statusCode).toBe(200)
      const started = Date.now()
      const res = await request(`http://127.0.0.1:${port}/api/data`, { headersTimeout: 5000 })
      await res.body.text()
      expect(res.statusCode).toBe(200)
      expect(Date.now() - started).toBeLessThan(1000)
    } finally {
      for (const s of streams) s.close()
    }
  })

  it('cuts the connection of a streamed body that does not match the app\'s Content-Length, in both forms: no byte past it, no next response read as its rest', async () => {
    for (const name of ['threads: 0', 'threads: 2']) {
      const { port } = servers[name]!
      for (const declared of [5, 100]) {
        // A second request pipelined behind it: its answer must not come on this connection.
        const socket = connect(port, '127.0.0.1')
        let text = ''
        socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
        socket.write(`GET /length?declared=${declared} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\nGET /api/data HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`)
        const closed = await Promise.race([once(socket, 'close').then(() => true), new Promise((resolve) => setTimeout(resolve, 5000, false))])
        socket.destroy()
        const at = `${name}, declared ${declared}`
        expect(closed, at).toBe(true)
        // Longer than declared: not a byte past it.
        if (declared === 5) expect(text, at).not.toContain('world')
        // At most its own head: never the next request's answer.
        expect((text.match(/HTTP\/1\.1 \d{3}/g) ?? []).length, at).toBeLessThanOrEqual(1)
      }
      // A body that matches is sent whole.
      const res = await request(`http://127.0.0.1:${port}/length?declared=11`)
      expect([res.statusCode, await res.body.text()]).toEqual([200, 'hello world'])
    }
  })

  it('in pool mode, loaders that wait on I/O run beyond the slots: 8 naps of 800 ms on 2 slots end in about one nap', async () => {
    const { port } = servers['threads: 1']!
    const started = Date.now()
    const answers = await Promise.all(Array.from({ length: 8 }, async () => {
      const res = await request(`http://127.0.0.1:${port}/nap?ms=800`)
      await res.body.text()
      return res.statusCode
    }))
    expect(answers).toEqual(Array(8).fill(200))
    // Two at a time would take four naps (3.2 s).
    expect(Date.now() - started).toBeLessThan(2400)
  })

  it('in pool mode, keeps as many loaders that wait on I/O running as keep the threads busy, not one more per poll', async () => {
    const { port } = servers['threads: 1']!
    // The pool of 'threads: 1': one thread, two slots.
    const pool = () => renderPoolStats().find((p) => p.threads === 1 && p.capacity === 2)!
    let most = 0
    const watch = setInterval(() => { most = Math.max(most, pool().busy) }, 5)
    try {
      const answers = await Promise.all(Array.from({ length: 100 }, async () => {
        const res = await request(`http://127.0.0.1:${port}/nap?ms=100`)
        await res.body.text()
        return res.statusCode
      }))
      expect(answers).toEqual(Array(100).fill(200))
    } finally {
      clearInterval(watch)
    }
    // Growing by one a poll (10 ms) while the thread idles and keeping what it reached: past
    // 25. Starting one more a poll and falling back to the two slots at every end held about
    // as many as the polls a nap lasts (10) beyond the slots.
    expect(most).toBeGreaterThanOrEqual(25)
  })
})
