import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import compress from '@fastify/compress'
import cors from '@fastify/cors'
import { RouterContextProvider } from 'react-router'
import { request } from 'undici'
import { reactRouterAdapter } from '@spindle/react-router'
import { appDir, buildApp, serverBuild } from './fixtures/build.ts'
import { postThenGet } from '../../runtime/test/raw-http.ts'

const BROWSER = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36' }
let fastify: FastifyInstance
let base: string

beforeAll(async () => {
  buildApp()
  fastify = Fastify({ trustProxy: true })
  fastify.get('/before', async () => ({ route: 'before' }))
  await fastify.register(cors, { origin: 'https://client.test' })
  await fastify.register(compress, { threshold: 1024 })
  await fastify.register(reactRouterAdapter, { build: serverBuild, getLoadContext: () => new RouterContextProvider() })
  fastify.get('/after', async () => ({ route: 'after' }))
  fastify.post('/json', async (req) => ({ parsed: req.body }))
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
}, 240_000)

afterAll(async () => { await fastify?.close() })

async function get (path: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(base + path, { ...init, headers: { ...BROWSER, ...(init.headers as Record<string, string>) } })
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('reactRouterAdapter in one Fastify process', () => {
  it('renders a route with its loader data', async () => {
    const res = await get('/')
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toContain('text/html')
    expect(res.body).toContain('hello from the loader')
  })

  it('builds the request URL from trustProxy-aware protocol and host', async () => {
    const res = await get('/', { headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'shop.test' } })
    expect(res.body).toContain('https:<!-- -->//<!-- -->shop.test')
  })

  it('answers 400 SPINDLE_REACT_ROUTER_BAD_REQUEST to a trusted X-Forwarded-Proto other than http or https', async () => {
    for (const proto of ['a b', 'javascript', 'ftp', 'http:']) {
      const res = await get('/', { headers: { 'x-forwarded-proto': proto } })
      expect(res.status, proto).toBe(400)
      expect(JSON.parse(res.body).code, proto).toBe('SPINDLE_REACT_ROUTER_BAD_REQUEST')
    }
  })

  it('streams a deferred loader value to a browser in the same response', async () => {
    const res = await request(base + '/slow', { headers: BROWSER })
    expect(res.headers['transfer-encoding']).toBe('chunked')
    const chunks: string[] = []
    for await (const chunk of res.body) chunks.push(String(chunk))
    const html = chunks.join('')
    expect(html).toContain('waiting for deferred')
    expect(html).toContain('deferred value arrived')
    expect(chunks.length).toBeGreaterThan(1)
    // The shell leaves before the deferred part: React's pieces are joined per turn, not per response.
    expect(chunks[0]).toContain('waiting for deferred')
    expect(chunks[0]).not.toContain('deferred value arrived')
  })

  it('runs actions from form posts and JSON bodies, untouched by Fastify\'s parsers', async () => {
    const form = await get('/form', { method: 'POST', body: 'name=grace', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(form.status).toBe(200)
    expect(form.body).toContain('form<!-- -->:<!-- -->grace')
    const json = await get('/form', { method: 'POST', body: JSON.stringify({ x: 1 }), headers: { 'content-type': 'application/json' } })
    expect(json.body).toContain('json<!-- -->:<!-- -->{&quot;x&quot;:1}')
    // The user's own JSON route still gets Fastify's parsed body.
    expect(JSON.parse((await get('/json', { method: 'POST', body: '{"a":2}', headers: { 'content-type': 'application/json' } })).body)).toEqual({ parsed: { a: 2 } })
  })

  it('answers redirects, error boundaries with 500, and 404', async () => {
    const go = await get('/go')
    expect(go.status).toBe(302)
    expect(go.headers.location).toBe('/about')
    const boom = await get('/boom')
    expect(boom.status).toBe(500)
    expect(boom.body).toContain('error boundary <!-- -->500')
    const missing = await get('/no/such/route')
    expect(missing.status).toBe(404)
    expect(missing.body).toContain('error boundary <!-- -->404')
  })

  it('serves resource routes with the load context, and keeps every Set-Cookie', async () => {
    const data = await get('/api/data')
    expect(JSON.parse(data.body)).toMatchObject({ resource: true, hasContext: true })
    const cookies = await get('/cookies')
    expect(cookies.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/; HttpOnly'])
  })

  it('answers single-fetch .data requests and the route manifest', async () => {
    const data = await get('/about.data')
    expect(data.status).toBe(200)
    expect(data.body).toContain('about loader data')
    const build = await import(serverBuild) as { assets: { version: string } }
    const manifest = await get(`/__manifest?paths=${encodeURIComponent('/about')}&version=${build.assets.version}`)
    expect(manifest.status).toBe(200)
    expect(manifest.body).toContain('routes/about')
  })

  it('serves hashed assets immutable, other client files briefly, and nothing outside the client folder', async () => {
    const asset = readdirSync(join(appDir, 'build/client/assets')).find((f) => f.endsWith('.js'))!
    const res = await get(`/assets/${asset}`)
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('application/javascript; charset=utf-8')
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    const file = await get('/hello.txt')
    expect(file.body).toBe('fixture public file\n')
    expect(file.headers['cache-control']).toBe('public, max-age=3600')
    expect(file.headers['content-type']).toBe('text/plain; charset=utf-8')
    expect((await get('/doc.pdf')).headers['content-type']).toBe('application/pdf')
    // /.well-known/ is served (app links, ACME checks); other dotfiles never are.
    const wellKnown = await get('/.well-known/security.txt')
    expect(wellKnown.status).toBe(200)
    expect(wellKnown.body).toBe('Contact: mailto:security@example.test\n')
    const secret = await get('/.secret.txt')
    expect(secret.status).toBe(404)
    expect(secret.body).not.toContain('not for clients')
    // Conditional and partial requests, as a file server answers them.
    const etag = file.headers.etag as string
    expect(etag).toBeTruthy()
    const again = await get('/hello.txt', { headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
    expect(again.body).toBe('')
    const since = await get('/hello.txt', { headers: { 'if-modified-since': file.headers['last-modified'] as string } })
    expect(since.status).toBe(304)
    const part = await get('/hello.txt', { headers: { range: 'bytes=0-6' } })
    expect(part.status).toBe(206)
    expect(part.headers['content-range']).toBe('bytes 0-6/20')
    expect(part.body).toBe('fixture')
    const head = await get('/hello.txt', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers['content-length']).toBe('20')
    expect(head.body).toBe('')
    for (const path of ['/..%2fserver%2findex.js', '/assets/..%2f..%2fserver%2findex.js', '/%2e%2e/server/index.js']) {
      const escape = await get(path)
      expect(escape.body).not.toContain('renderToReadableStream')
    }
  })

  it('lets user routes win, and composes with @fastify/cors preflights', async () => {
    expect(JSON.parse((await get('/before')).body)).toEqual({ route: 'before' })
    expect(JSON.parse((await get('/after')).body)).toEqual({ route: 'after' })
    const preflight = await get('/form', { method: 'OPTIONS', headers: { origin: 'https://client.test', 'access-control-request-method': 'POST' } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers['access-control-allow-origin']).toBe('https://client.test')
    const page = await get('/', { headers: { origin: 'https://client.test' } })
    expect(page.headers['access-control-allow-origin']).toBe('https://client.test')
  })
})

describe('reactRouterAdapter and the client connection', () => {
  it('aborts the request signal when the client disconnects', async () => {
    const ac = new AbortController()
    const pending = request(base + '/wait', { signal: ac.signal }).catch(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 200))
    ac.abort()
    await pending
    const deadline = Date.now() + 2000
    while (!(globalThis as { __spindleAbortSeen?: boolean }).__spindleAbortSeen && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    expect((globalThis as { __spindleAbortSeen?: boolean }).__spindleAbortSeen).toBe(true)
  })

  it('answers the next request on a connection after a body the app never read (a POST to a route without an action)', async () => {
    const { port } = new URL(base)
    expect(await postThenGet(Number(port), '/about', 1024 * 1024, '/about')).toEqual({ statuses: ['405', '200'], closed: true })
  })

  it('lets @fastify/compress compress streamed pages', async () => {
    const res = await request(base + '/', { headers: { ...BROWSER, 'accept-encoding': 'gzip' } })
    expect(res.headers['content-encoding']).toBe('gzip')
    const { gunzipSync } = await import('node:zlib')
    expect(gunzipSync(Buffer.from(await res.body.arrayBuffer())).toString()).toContain('hello from the loader')
  })
})

/** An app folder whose vite.config throws: dev: true reports it with its own code. */
function brokenViteApp (): string {
  const dir = mkdtempSync(join(tmpdir(), 'spindle-broken-vite-'))
  writeFileSync(join(dir, 'vite.config.mjs'), "throw new Error('a broken vite.config')\n")
  return dir
}

describe('reactRouterAdapter options', () => {
  const broken = brokenViteApp()
  afterAll(() => { rmSync(broken, { recursive: true, force: true }) })
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ build: '/no/such/build/server/index.js' }, 'SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND', 'react-router build'],
    [{ build: 42 }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'build must be the path of build/server/index.js'],
    [{ build: serverBuild, mode: 'prod' }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', "mode must be 'production' or 'development'"],
    [{ build: serverBuild, getLoadContext: {} }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'getLoadContext must be a function'],
    [{ build: serverBuild, staticMaxAge: -1 }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'staticMaxAge must be a whole number'],
    [{ build: serverBuild, bulid: 1 }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'unknown option "bulid"'],
    [{}, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'build must be the path of build/server/index.js, a ServerBuild or a function, got undefined'],
    [{ build: serverBuild, clientDir: 3 }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'clientDir must be a folder path or false, got 3'],
    [{ build: serverBuild, clientDir: '/no/such/client' }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'clientDir must be a folder (the client build), got "/no/such/client"'],
    [{ build: serverBuild, clientDir: serverBuild }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'clientDir must be a folder (the client build)'],
    [{ build: serverBuild, hangTimeout: -1 }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'hangTimeout must be an integer from 0 (ms; 0 = never), got -1'],
    [{ build: { not: 'a build' } }, 'SPINDLE_REACT_ROUTER_BUILD_INVALID', 'not a server build'],
    [{ dev: 'yes' }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'dev must be a boolean'],
    [{ dev: true, build: serverBuild }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'build and dev: true exclude each other'],
    [{ dev: true, root: '/no/such/app' }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'root must be an existing folder'],
    [{ dev: true, mode: 'production' }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', "mode must be 'development'"],
    [{ build: serverBuild, root: appDir }, 'SPINDLE_REACT_ROUTER_INVALID_OPTION', 'root is the app folder for dev: true'],
    [{ dev: true, root: broken }, 'SPINDLE_REACT_ROUTER_VITE_FAILED', 'a broken vite.config'],
  ]
  for (const [opts, code, message] of cases) {
    it(`refuses ${JSON.stringify(opts).replace(serverBuild, 'BUILD').replace(appDir, 'APP').replace(/"[^"]*spindle-broken-vite[^"]*"/, 'BROKEN')}`, async () => {
      const app = Fastify()
      await expect(app.register(reactRouterAdapter, opts as never)).rejects.toMatchObject({ code, message: expect.stringContaining(message) })
      await app.close()
    })
  }
})
