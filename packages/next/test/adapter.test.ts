import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { FormData, request } from 'undici'
import { nextAdapter } from '@spindle/next'
import { appDir, buildApp } from './fixtures/build.ts'
import { badHostAnswers, rawRequest } from '../../runtime/test/raw-http.ts'

let fastify: FastifyInstance
let base: string
const statuses: Array<[string, number]> = []

beforeAll(async () => {
  buildApp()
  fastify = Fastify()
  // A hook and a route registered before the adapter, a route and a JSON route after it.
  fastify.addHook('onRequest', async (_req, reply) => { reply.header('x-from-fastify', 'yes') })
  fastify.addHook('onResponse', async (req, reply) => { statuses.push([req.url, reply.statusCode]) })
  fastify.get('/before', async () => ({ route: 'before' }))
  await fastify.register(nextAdapter, { dir: appDir })
  fastify.get('/after', async () => ({ route: 'after' }))
  fastify.post('/json', async (req) => ({ parsed: req.body }))
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
})

afterAll(async () => { await fastify?.close() })

async function get (path: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(base + path, init)
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('nextAdapter in one Fastify process', () => {
  it('gives route handlers the port Fastify listens on (port 0: bound after Next started), not localhost:3000', async () => {
    const { port } = new URL(base)
    // Next writes a loopback address as localhost.
    expect(JSON.parse((await get('/api/url?x=1')).body).url).toBe(`http://localhost:${port}/api/url?x=1`)
  })

  it('answers 400 SPINDLE_NEXT_BAD_REQUEST, before Next runs, to a Host that is not host[:port] and to a target that is not a path', async () => {
    const res = await get('/api/url', { headers: { host: 'evil.test/other' } })
    expect(res.status).toBe(400)
    expect(JSON.parse(res.body).code).toBe('SPINDLE_NEXT_BAD_REQUEST')
    // Asterisk-form and absolute-form, written byte for byte (HTTP clients send a path).
    const { port } = new URL(base)
    for (const target of ['*', 'http://other.test/api/url']) {
      const answer = await rawRequest(Number(port), `GET ${target} HTTP/1.1\r\nhost: app.test\r\nconnection: close\r\n\r\n`)
      expect(answer.statusLine, target).toBe('HTTP/1.1 400 Bad Request')
      expect(answer.body, target).toContain('SPINDLE_NEXT_BAD_REQUEST')
    }
  })

  it('answers 400 SPINDLE_NEXT_BAD_REQUEST, before Next runs, to a request with two Host lines, which Node would read as the first alone', async () => {
    const { port } = new URL(base)
    for (const request of [
      'GET /api/url HTTP/1.1\r\nHost: app.test\r\nHost: evil.test\r\nConnection: close\r\n\r\n',
      'POST /api/echo HTTP/1.1\r\nHost: app.test\r\nhost: evil.test\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi',
    ]) {
      const answer = await rawRequest(Number(port), request)
      expect(answer.statusLine).toBe('HTTP/1.1 400 Bad Request')
      expect(answer.body).toContain('SPINDLE_NEXT_BAD_REQUEST')
    }
  })

  it('answers 400 SPINDLE_NEXT_BAD_REQUEST, before Next runs, to a Host a URL refuses or reads as another host', async () => {
    const port = Number(new URL(base).port)
    expect(await badHostAnswers(port, 'SPINDLE_NEXT_BAD_REQUEST', (host) => [
      `GET /api/url HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      `POST /api/echo HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`,
    ])).toEqual([])
  })

  it('renders App Router pages, with headers set on reply by Fastify hooks', async () => {
    const res = await get('/')
    expect(res.status).toBe(200)
    expect(res.body).toContain('clicked <!-- -->0<!-- --> times')
    expect(res.headers['x-from-fastify']).toBe('yes')
    expect((await get('/static')).body).toContain('static page')
  })

  it('streams a Suspense boundary: the fallback first, then the resolved part in the same response', async () => {
    const res = await request(base + '/stream')
    expect(res.headers['transfer-encoding']).toBe('chunked')
    const chunks: string[] = []
    for await (const chunk of res.body) chunks.push(String(chunk))
    const html = chunks.join('')
    expect(html).toContain('loading slow part')
    expect(html).toContain('slow part done')
    expect(chunks.length).toBeGreaterThan(1)
  })

  it('serves /_next/static immutable, public/ files, and a Pages Router page', async () => {
    const home = await get('/')
    const asset = /\/_next\/static\/[^"]+\.js/.exec(home.body)?.[0]
    expect(asset).toBeDefined()
    const res = await get(asset!)
    expect(res.status).toBe(200)
    expect(res.headers['cache-control']).toContain('immutable')
    expect((await get('/hello.txt')).body).toBe('hello from public\n')
    expect((await get('/legacy')).body).toContain('pages router')
  })

  it('optimizes images through /_next/image', async () => {
    const res = await get('/_next/image?url=%2Fpixel.png&w=64&q=75', { headers: { accept: 'image/webp,image/*' } })
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toMatch(/^image\//)
  })

  it('runs the proxy (middleware): rewrites with headers, and redirects', async () => {
    const rewritten = await get('/old')
    expect(rewritten.status).toBe(200)
    expect(rewritten.body).toContain('static page')
    expect(rewritten.headers['x-proxy']).toBe('rewrote')
    const moved = await get('/moved')
    expect(moved.status).toBe(308)
    expect(moved.headers.location).toMatch(/\/static$/)
  })

  it('passes request bodies to route handlers untouched, while the user\'s own JSON route still parses', async () => {
    const payload = JSON.stringify({ a: 1, nested: { b: [1, 2, 3] } })
    const echo = await get('/api/echo', { method: 'POST', body: payload, headers: { 'content-type': 'application/json' } })
    expect(JSON.parse(echo.body)).toEqual({ contentType: 'application/json', length: payload.length, text: payload })
    const form = await get('/api/echo', { method: 'POST', body: 'x=1&y=2', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(JSON.parse(form.body).text).toBe('x=1&y=2')
    const json = await get('/json', { method: 'POST', body: payload, headers: { 'content-type': 'application/json' } })
    expect(JSON.parse(json.body)).toEqual({ parsed: { a: 1, nested: { b: [1, 2, 3] } } })
  })

  it('lets the user\'s routes win over the catch-all, registered before or after', async () => {
    expect(JSON.parse((await get('/before')).body)).toEqual({ route: 'before' })
    expect(JSON.parse((await get('/after')).body)).toEqual({ route: 'after' })
  })

  it('answers HEAD without a body and 404 with Next\'s page, and onResponse sees the real status', async () => {
    const head = await get('/static', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.body).toBe('')
    const missing = await get('/no/such/page')
    expect(missing.status).toBe(404)
    expect(missing.body).toContain('404')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(statuses).toContainEqual(['/no/such/page', 404])
    expect(statuses).toContainEqual(['/moved', 308])
  })

  it('runs a server action posted by a form', async () => {
    const page = await get('/action')
    // The action id travels in a hidden input Next renders into the form.
    const actionField = /name="(\$ACTION_ID_[^"]+)"/.exec(page.body)?.[1]
    expect(actionField).toBeDefined()
    const form = new FormData()
    form.append(actionField!, '')
    form.append('n', '5')
    const res = await request(base + '/action', { method: 'POST', body: form, headers: { origin: base } })
    await res.body.text()
    expect(res.statusCode).toBeLessThan(400)
    expect((await get('/action')).body).toMatch(/submitted <!-- -->5/)
  })
})

describe('nextAdapter options', () => {
  it('gives its pages render turns in a server of its own (renderTurns), none with renderTurns: false', async () => {
    // The shared server above has them by default.
    expect(fastify.hasPlugin('@spindle/render-turns')).toBe(true)
    const app = Fastify()
    await app.register(nextAdapter, { dir: appDir, renderTurns: false })
    await app.ready()
    expect(app.hasPlugin('@spindle/render-turns')).toBe(false)
    await app.close()
    await expect(Fastify().register(nextAdapter, { dir: appDir, renderTurns: 1 as unknown as boolean })).rejects.toMatchObject({ code: 'SPINDLE_NEXT_INVALID_OPTION', message: expect.stringContaining('renderTurns') })
  }, 60_000)

  it('refuses a dir that does not exist, naming the option', async () => {
    const app = Fastify()
    await expect(app.register(nextAdapter, { dir: '/no/such/dir' })).rejects.toMatchObject({ code: 'SPINDLE_NEXT_INVALID_OPTION', message: expect.stringContaining('dir must be an existing folder') })
    await app.close()
  })

  it('refuses an app without a production build and says how to build it', async () => {
    const app = Fastify()
    const empty = mkdtempSync(join(tmpdir(), 'next-nobuild-'))
    await expect(app.register(nextAdapter, { dir: empty })).rejects.toMatchObject({ code: 'SPINDLE_NEXT_NO_BUILD', message: expect.stringContaining('next build') })
    await app.close()
  })

  it('refuses unknown and mistyped options', async () => {
    for (const [opts, message] of [
      [{ dir: appDir, dev: 'yes' }, 'dev must be a boolean'],
      [{ dir: appDir, dri: 'x' }, 'unknown option "dri"'],
      [{ dir: 42 }, 'dir must be the path of a Next.js app folder'],
      [{}, 'dir must be the path of a Next.js app folder, got undefined'],
      [{ dir: appDir, threadConcurrency: 0 }, 'threadConcurrency must be an integer from 1, got 0'],
      [{ dir: appDir, quiet: null }, 'quiet must be a boolean, got null'],
    ] as const) {
      const app = Fastify()
      await expect(app.register(nextAdapter, opts as never)).rejects.toMatchObject({ code: 'SPINDLE_NEXT_INVALID_OPTION', message: expect.stringContaining(message) })
      await app.close()
    }
  })
})
