import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { threadId } from 'node:worker_threads'
import Fastify, { type FastifyInstance } from 'fastify'
import { FormData, request } from 'undici'
import { nextAdapter } from '@spindle/next'
import { renderPoolStats } from '@spindle/runtime/pool'
import { appDir, buildApp } from './fixtures/build.ts'
import { badHostAnswers, leavingClient, postThenGet, rawRequest, seededRandom } from '../../runtime/test/raw-http.ts'

// The adapter's own suite, in pool mode: Next runs in 2 pool threads, Fastify and its hooks here.
let fastify: FastifyInstance
let base: string
const statuses: Array<[string, number]> = []
const warnings: Array<Error & { code?: string }> = []
const onWarning = (w: Error) => { warnings.push(w) }

beforeAll(async () => {
  buildApp()
  fastify = Fastify()
  fastify.addHook('onRequest', async (_req, reply) => { reply.header('x-from-fastify', 'yes') })
  fastify.addHook('onResponse', async (req, reply) => { statuses.push([req.url, reply.statusCode]) })
  // Next is told where the server listens before it starts: find a free port first.
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const port = (probe.address() as { port: number }).port
  await new Promise((resolve) => probe.close(resolve))
  process.on('warning', onWarning)
  await fastify.register(nextAdapter, { dir: appDir, threads: 2, hostname: 'app.spindle.test', port })
  process.off('warning', onWarning)
  await fastify.listen({ port, host: '127.0.0.1' })
  base = `http://127.0.0.1:${port}`
}, 240_000)

afterAll(async () => { await fastify?.close() })

async function get (path: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(base + path, init)
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('nextAdapter with threads: Next runs in pool threads', () => {
  it('warns once, at start, that Next\'s caches are per thread in a build without withSpindle', async () => {
    await new Promise((resolve) => setImmediate(resolve))
    const perThread = warnings.filter((w) => w.code === 'SPINDLE_NEXT_CACHE_PER_THREAD')
    expect(perThread).toHaveLength(1)
    expect(perThread[0]!.message).toContain('withSpindle()')
  })

  it('renders App Router pages with headers set by Fastify hooks, route handlers on both pool threads', async () => {
    const res = await get('/')
    expect(res.status).toBe(200)
    expect(res.body).toContain('clicked <!-- -->0<!-- --> times')
    expect(res.headers['x-from-fastify']).toBe('yes')
    // Requests at once spread over the threads (the least busy takes each); a quick one may
    // end before the next arrives, so ask a few times.
    const threads = new Set<number>()
    for (let i = 0; i < 20 && threads.size < 2; i++) {
      for (const res of await Promise.all(Array.from({ length: 4 }, () => get('/api/thread')))) threads.add(JSON.parse(res.body).thread)
    }
    expect(threads.size).toBe(2)
    expect(threads.has(threadId)).toBe(false)
  })

  it('streams a Suspense boundary: the fallback arrives before the resolved part', async () => {
    const started = Date.now()
    const res = await request(base + '/stream')
    const arrivals: Array<{ at: number, text: string }> = []
    for await (const chunk of res.body) arrivals.push({ at: Date.now() - started, text: String(chunk) })
    const first = arrivals.findIndex((a) => a.text.includes('loading slow part'))
    const last = arrivals.findIndex((a) => a.text.includes('slow part done'))
    expect(first).toBeGreaterThanOrEqual(0)
    expect(last).toBeGreaterThan(first)
    expect(arrivals[last]!.at - arrivals[first]!.at).toBeGreaterThan(150)
  })

  it('serves /_next/static, public/ files, a Pages Router page and next/image', async () => {
    const home = await get('/')
    const asset = /\/_next\/static\/[^"]+\.js/.exec(home.body)?.[0]
    const res = await get(asset!)
    expect(res.status).toBe(200)
    expect(res.headers['cache-control']).toContain('immutable')
    expect((await get('/hello.txt')).body).toBe('hello from public\n')
    expect((await get('/legacy')).body).toContain('pages router')
    const image = await get('/_next/image?url=%2Fpixel.png&w=64&q=75', { headers: { accept: 'image/webp,image/*' } })
    expect(image.status).toBe(200)
    expect(image.headers['content-type']).toMatch(/^image\//)
  })

  it('runs the proxy (middleware) rewrites and redirects; onResponse sees the real status', async () => {
    const rewritten = await get('/old')
    expect(rewritten.body).toContain('static page')
    expect(rewritten.headers['x-proxy']).toBe('rewrote')
    const moved = await get('/moved')
    expect(moved.status).toBe(308)
    expect(moved.headers.location).toMatch(/\/static$/)
    const missing = await get('/no/such/page')
    expect(missing.status).toBe(404)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(statuses).toContainEqual(['/moved', 308])
    expect(statuses).toContainEqual(['/no/such/page', 404])
  })

  it('passes request bodies to route handlers, answers HEAD without a body, and runs a server action', async () => {
    const payload = JSON.stringify({ a: 1, nested: { b: [1, 2, 3] } })
    const echo = await get('/api/echo', { method: 'POST', body: payload, headers: { 'content-type': 'application/json' } })
    expect(JSON.parse(echo.body)).toEqual({ contentType: 'application/json', length: payload.length, text: payload })
    const head = await get('/static', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.body).toBe('')
    const page = await get('/action')
    const actionField = /name="(\$ACTION_ID_[^"]+)"/.exec(page.body)?.[1]
    expect(actionField).toBeDefined()
    const form = new FormData()
    form.append(actionField!, '')
    form.append('n', '7')
    const res = await request(base + '/action', { method: 'POST', body: form, headers: { origin: base } })
    expect(res.statusCode).toBeLessThan(400)
    // The state lives in the thread that ran the action, and its answer is the page rendered
    // after it (the next GET may go to the other thread).
    expect(await res.body.text()).toMatch(/submitted <!-- -->7/)
  })

  it('gives route handlers the URL of this server (hostname and port), not localhost:3000', async () => {
    const { port } = new URL(base)
    expect(JSON.parse((await get('/api/url?x=1')).body).url).toBe(`http://app.spindle.test:${port}/api/url?x=1`)
  })

  it('answers 400 SPINDLE_NEXT_BAD_REQUEST to a Host that is not host[:port], before Next runs', async () => {
    const res = await get('/api/url', { headers: { host: 'evil.test/other' } })
    expect(res.status).toBe(400)
    expect(JSON.parse(res.body).code).toBe('SPINDLE_NEXT_BAD_REQUEST')
  })

  it('answers 400 SPINDLE_NEXT_BAD_REQUEST to a Host a URL refuses or reads as another host, before Next runs', async () => {
    const port = Number(new URL(base).port)
    expect(await badHostAnswers(port, 'SPINDLE_NEXT_BAD_REQUEST', (host) => [
      `GET /api/url HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      `POST /api/echo HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`,
    ])).toEqual([])
  })

  it('serves a request with a header named __proto__ or constructor, as Next in one thread does', async () => {
    const port = Number(new URL(base).port)
    for (const header of ['__proto__: x', 'constructor: x', 'Constructor: a\r\nconstructor: b']) {
      const answer = await rawRequest(port, `GET /api/request HTTP/1.1\r\nHost: app.test\r\nUser-Agent: ua\r\n${header}\r\nConnection: close\r\n\r\n`)
      expect(answer.statusLine, header).toBe('HTTP/1.1 200 OK')
      expect(JSON.parse(answer.body).userAgent, header).toBe('ua')
    }
  })

  it('answers the next request on a connection after a body Next never read (a POST to a page)', async () => {
    const port = Number(new URL(base).port)
    expect(await postThenGet(port, '/static', 1024 * 1024, '/static')).toEqual({ statuses: ['200', '200'], closed: true })
  })

  it('gives back every slot after clients that leave mid-page, mid-stream, mid-upload, or never read', async () => {
    const { port } = new URL(base)
    const random = seededRandom(13)
    const targets = ['/', '/stream', '/api/big', '/api/echo', '/static', '/nope']
    const visit = () => {
      const target = targets[Math.floor(random() * targets.length)]!
      return target === '/api/echo'
        ? leavingClient(Number(port), `POST /api/echo HTTP/1.1\r\nhost: app.spindle.test\r\ncontent-type: text/plain\r\ncontent-length: ${1 << 20}\r\n\r\n`, Buffer.alloc(Math.floor(random() * (1 << 19)), 97), random)
        : leavingClient(Number(port), `GET ${target} HTTP/1.1\r\nhost: app.spindle.test\r\n\r\n`, undefined, random)
    }
    for (let wave = 0; wave < 4; wave++) await Promise.all(Array.from({ length: 30 }, visit))
    const idle = () => renderPoolStats().every((p) => p.busy === 0 && p.queued === 0)
    for (let i = 0; i < 100 && !idle(); i++) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(renderPoolStats().map((p) => [p.busy, p.queued])).toEqual([[0, 0]])
    // The burst looked like an overload to the pool's admission, which judges the last
    // maxBacklog (1 s) before it is back to normal (docs/overload.md#admission).
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const pages = await Promise.all(Array.from({ length: 12 }, () => get('/')))
    expect(pages.map((p) => p.status)).toEqual(Array(12).fill(200))
  })

  it('compresses with Next\'s own compression, the headers intact', async () => {
    const res = await request(base + '/', { headers: { 'accept-encoding': 'gzip' } })
    expect(res.headers['content-encoding']).toBe('gzip')
    const { gunzipSync } = await import('node:zlib')
    expect(gunzipSync(Buffer.from(await res.body.arrayBuffer())).toString()).toContain('clicked')
  })
})

describe('nextAdapter threads options', () => {
  it('refuses threads with dev and bad counts, naming the option', async () => {
    for (const [opts, message] of [
      [{ dir: appDir, dev: true, threads: 2 }, 'threads is for a production build'],
      [{ dir: appDir, threads: 1.5 }, 'threads must be an integer from 0'],
      [{ dir: appDir, port: 70_000 }, 'port must be an integer from 1 to 65535'],
      [{ dir: appDir, hostname: '' }, 'hostname must be a non-empty string'],
    ] as const) {
      const app = Fastify()
      await expect(app.register(nextAdapter, opts as never)).rejects.toMatchObject({ code: 'SPINDLE_NEXT_INVALID_OPTION', message: expect.stringContaining(message) })
      await app.close()
    }
  })

  it('takes threads from SPINDLE_POOL_THREADS when the option is absent; an explicit threads: 0 wins', async () => {
    process.env.SPINDLE_POOL_THREADS = '1'
    try {
      for (const [threads, inPool] of [[undefined, true], [0, false]] as const) {
        const app = Fastify()
        await app.register(nextAdapter, { dir: appDir, ...(threads === undefined ? {} : { threads }) })
        const res = await app.inject('/api/thread')
        expect(res.statusCode).toBe(200)
        expect(res.json().thread !== threadId).toBe(inPool)
        await app.close()
      }
    } finally {
      delete process.env.SPINDLE_POOL_THREADS
    }
  })
})
