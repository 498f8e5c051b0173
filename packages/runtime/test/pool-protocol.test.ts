import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { request } from 'undici'
import { RenderPool, renderPoolStats, requestHead } from '@spindle/runtime/pool'
import { fixture, waitFor } from './helpers.ts'
import { connect as connectH2 } from 'node:http2'
import { h2Get, headerValues, rawRequest } from './raw-http.ts'

// The main thread's side of the pool protocol, against a pool thread without a framework
// (fixtures/pool-thread-heads.mjs) that answers with heads an app may write.

const marker = join(tmpdir(), `spindle-pool-fail-${process.pid}`)
let app: FastifyInstance
let url: string
let pool: RenderPool

beforeAll(async () => {
  rmSync(marker, { force: true })
  app = Fastify({ logger: false })
  pool = await RenderPool.start({
    filename: fixture('pool-thread-heads.mjs'),
    threads: 1,
    concurrency: 2,
    options: { failIfExists: marker },
    shared: {},
    maxBacklog: 1000,
    hangTimeout: 0,
    startTimeout: 20_000,
    log: app.log,
  })
  // An onSend hook that answers something else than the streamed body, as a maintenance page would.
  app.addHook('onSend', async (req, _reply, payload) => (req.headers['x-replace'] ? 'replaced\n' : payload))
  app.all('/*', async (req, reply) => {
    await pool.dispatch(req, reply, requestHead(req, `http://127.0.0.1${req.url}`))
    return reply
  })
  url = await app.listen({ port: 0, host: '127.0.0.1' })
}, 60_000)

afterAll(async () => {
  rmSync(marker, { force: true })
  await app?.close()
  await pool?.close()
})

async function get (path: string, headers: Record<string, string> = {}) {
  const res = await request(url + path, { headers, headersTimeout: 10_000, bodyTimeout: 10_000 })
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

const busy = (): number => renderPoolStats().reduce((n, s) => n + s.busy, 0)

describe('render pool: heads the main thread cannot send as they are', () => {
  it('a status outside 100-599 (Node lets an app write up to 999) gets 502 without the app\'s headers, and the server serves on', async () => {
    const res = await get('/status-999')
    expect(res.status).toBe(502)
    expect(JSON.parse(res.body).code).toBe('SPINDLE_RUNTIME_POOL_BAD_RESPONSE')
    expect(res.headers['set-cookie']).toBeUndefined()
    expect((await get('/after')).body).toBe('ok /after')
    await waitFor('the slot to come back', () => busy() === 0, 2000)
  })

  it('a Trailer header (no trailer crosses the port) is dropped, and the page is sent', async () => {
    const res = await get('/trailer')
    expect(res.status).toBe(200)
    expect(res.body).toBe('hello body\n')
    expect(res.headers.trailer).toBeUndefined()
    expect((await get('/after')).body).toBe('ok /after')
    await waitFor('the slot to come back', () => busy() === 0, 2000)
  })

  it('a response without a Content-Type gets none (not application/octet-stream)', async () => {
    const res = await get('/no-type')
    expect(res.body).toBe('plain')
    expect(res.headers['content-type']).toBeUndefined()
  })
})

describe('render pool: heads of a Web handler', () => {
  // A pool thread that answers through serveWebTask, as React Router's does, with a server
  // that runs it on routes with and without an onSend hook.
  const entry = join(tmpdir(), `spindle-pool-web-heads-${process.pid}.mjs`)
  let server: FastifyInstance
  let webPool: RenderPool
  let port: number

  beforeAll(async () => {
    writeFileSync(entry, `import { poolTask, serveWebTask, signalReady } from ${JSON.stringify(new URL('../dist/pool/thread.js', import.meta.url).href)}
signalReady()
export default poolTask((task) => serveWebTask(task, async (request) => {
  const path = new URL(request.url).pathname
  if (path.endsWith('/no-content')) return new Response(null, { status: 204, headers: { 'content-type': 'text/plain', etag: '"e"' } })
  if (path.endsWith('-length')) {
    // 'hello world' in two turns, under a Content-Length of 5 or 100.
    const parts = ['hello', ' world']
    const body = new ReadableStream({
      async pull (controller) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        const part = parts.shift()
        if (part) controller.enqueue(new TextEncoder().encode(part))
        else controller.close()
      },
    })
    return new Response(body, { headers: { 'content-type': 'text/plain', 'content-length': path.endsWith('/short-length') ? '5' : '100' } })
  }
  // A Web Response takes control characters in a header value; Node refuses to write them.
  const made = path.endsWith('/made-it')
  return new Response('body', { status: made ? 201 : 200, statusText: made ? 'Made It' : '', headers: { 'content-type': 'text/plain', 'x-bad': 'a\\x01b', 'set-cookie': 'a=1' } })
}))
`)
    server = Fastify({ logger: false })
    webPool = await RenderPool.start({ filename: entry, threads: 1, concurrency: 1, options: {}, shared: {}, maxBacklog: 1000, hangTimeout: 0, startTimeout: 20_000, log: server.log })
    const render = async (req: FastifyRequest, reply: FastifyReply) => {
      await webPool.dispatch(req, reply, requestHead(req, `http://127.0.0.1${req.url}`))
      return reply
    }
    server.get('/*', render)
    await server.register(async (scope) => {
      scope.addHook('onSend', async (_req, _reply, payload) => payload)
      scope.get('/hooked/*', render)
    })
    await server.listen({ port: 0, host: '127.0.0.1' })
    port = (server.server.address() as { port: number }).port
  }, 60_000)

  afterAll(async () => {
    await server?.close()
    await webPool?.close()
    rmSync(entry, { force: true })
  })

  const answer = (path: string) => rawRequest(port, `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`)

  it('a header value Node refuses gets 502 without the app\'s headers, with or without an onSend hook, and the standard reason phrase ("502 OK" before)', async () => {
    for (const path of ['/ok', '/made-it', '/hooked/ok', '/hooked/made-it']) {
      const res = await answer(path)
      // Node checks the head only as it writes it, after the onSend hooks.
      expect(res.statusLine, path).toBe('HTTP/1.1 502 Bad Gateway')
      expect(JSON.parse(res.body).code, path).toBe('SPINDLE_RUNTIME_POOL_BAD_RESPONSE')
      expect(res.headers.map(([name]) => name), path).not.toContain('set-cookie')
    }
  })

  it('a streamed body that does not match the app\'s Content-Length cuts the connection: no byte past it, no next response read as its rest', async () => {
    for (const path of ['/short-length', '/long-length', '/hooked/short-length', '/hooked/long-length']) {
      // A second request pipelined behind it: its answer must not be sent on this connection.
      const socket = connect(port, '127.0.0.1')
      let text = ''
      socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
      socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\nGET /ok HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`)
      const closed = await Promise.race([once(socket, 'close').then(() => true), sleep(5000).then(() => false)])
      socket.destroy()
      expect(closed, path).toBe(true)
      // Longer: not a byte past the 5 it declared. Shorter: its bytes, then the end of the connection.
      if (path.endsWith('/short-length')) expect(text, path).not.toContain('world')
      // At most its own head (it may have left with the first bytes): never the next request's.
      expect((text.match(/HTTP\/1\.1 \d{3}/g) ?? []).length, path).toBeLessThanOrEqual(1)
    }
    await waitFor('the slots to come back', () => busy() === 0, 2000)
  })

  it('a 204 keeps the app\'s Content-Type, as in Fastify\'s thread', async () => {
    for (const path of ['/no-content', '/hooked/no-content']) {
      const res = await answer(path)
      expect(res.statusLine, path).toBe('HTTP/1.1 204 No Content')
      expect(headerValues(res, 'content-type'), path).toEqual(['text/plain'])
      expect(headerValues(res, 'etag'), path).toEqual(['"e"'])
    }
  })
})

describe('render pool over HTTP/2', () => {
  it('drops the connection-specific fields an app set (HTTP/2 has none) instead of failing the stream', async () => {
    const h2 = Fastify({ http2: true })
    h2.all('/*', async (req, reply) => {
      // The pool takes Fastify's HTTP/1 request and reply types; over HTTP/2 the objects are the same shape for it.
      const request = req as unknown as Parameters<typeof requestHead>[0]
      await pool.dispatch(request, reply as unknown as Parameters<RenderPool['dispatch']>[1], requestHead(request, `http://127.0.0.1${req.url}`))
      return reply
    })
    const h2url = await h2.listen({ port: 0, host: '127.0.0.1' })
    const session = connectH2(h2url)
    try {
      const res = await h2Get(session, '/hop')
      expect(res.status).toBe(200)
      expect(res.body).toBe('hop')
      expect(res.headers['keep-alive']).toBeUndefined()
      expect((await h2Get(session, '/after')).body).toBe('ok /after')
    } finally {
      session.close()
      await h2.close()
    }
  })
})

describe('render pool: a streamed response an onSend hook replaced', () => {
  it('stops the render and gives its slot back', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await get('/endless', { 'x-replace': '1' })
      expect(res.body).toBe('replaced\n')
    }
    await waitFor('every slot to come back', () => busy() === 0, 3000)
    // The slots serve: more replaced streams than the pool has slots went through.
    expect((await get('/after')).body).toBe('ok /after')
  })
})

describe('render pool: a replacement thread that cannot load', () => {
  it('answers 503 at once while no thread can load, does not end the process, and serves again once one can', async () => {
    writeFileSync(marker, 'x')
    // The thread ends; piscina's replacement fails while loading, and piscina starts no other.
    const exited = await get('/exit')
    expect(exited.status).toBe(502)
    const unavailable = await waitFor('requests to get 503 at once', async () => {
      const started = performance.now()
      const res = await get('/x')
      return res.status === 503 && performance.now() - started < 1000 ? res : undefined
    }, 10_000)
    expect(JSON.parse(unavailable.body).code).toBe('SPINDLE_RUNTIME_POOL_UNAVAILABLE')
    expect(unavailable.headers['retry-after']).toBe('1')
    rmSync(marker)
    expect(existsSync(marker)).toBe(false)
    // A fresh pool is tried again after 1, 2, 4 … s.
    const back = await waitFor('a fresh pool to serve', async () => {
      const res = await get('/back')
      return res.status === 200 ? res : undefined
    }, 20_000, 200)
    expect(back.body).toBe('ok /back')
  }, 40_000)
})
