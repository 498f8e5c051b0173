import { afterEach, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { connect, type ClientHttp2Session } from 'node:http2'
import { Agent, request } from 'undici'
import Fastify from 'fastify'
import { createSharedStore, httpCache, type HttpCacheOptions } from '@spindle/cache'

// HTTP/2 clients name the host in :authority and send no Host header.

const tls = { key: readFileSync(new URL('./fixtures/tls/test.key', import.meta.url)), cert: readFileSync(new URL('./fixtures/tls/test.crt', import.meta.url)) }

let app: { close: () => Promise<unknown> } | undefined
let session: ClientHttp2Session | undefined
afterEach(async () => {
  session?.destroy()
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
  session ??= connect(url, { ca: tls.cert })
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
    stream.setTimeout(5000, () => { reject(new Error(`no answer for ${path}`)) })
  })
}

/** Answers an HTTP/1.1 request (node:http's response) with this head as given, repeated fields included. */
function sendHttp1 (reply: { hijack: () => unknown, raw: unknown }, status: number, headers: Record<string, string | string[]>, body?: string): void {
  reply.hijack()
  const res = reply.raw as ServerResponse
  res.writeHead(status, headers as OutgoingHttpHeaders)
  res.end(body)
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

  it('never sends an HTTP/2 client the connection-specific fields of an answer made over HTTP/1.1', async () => {
    // HTTP/2 and HTTP/1.1 on one TLS port. The route passes on the fields of an HTTP/1.1
    // upstream when the client speaks HTTP/1.1, as a proxy does; a revalidation is run
    // over HTTP/1.1 (fastify.inject) whatever the client spoke.
    const server = Fastify({ http2: true, https: { allowHTTP1: true, ...tls } })
    app = server
    await server.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024 }) })
    let n = 0
    server.get('/proxied', async (req, reply) => {
      reply.header('cache-control', 'max-age=1')
      if (req.raw.httpVersionMajor === 1) reply.header('http2-settings', 'AAMAAABkAARAAAAAAAIAAAAA').header('proxy-connection', 'keep-alive').header('upgrade', 'h2c')
      return `proxied ${++n}`
    })
    const url = await server.listen({ port: 0, host: '127.0.0.1' })
    // Filled over HTTP/1.1, hit over HTTP/2.
    const dispatcher = new Agent({ allowH2: false, connect: { ca: tls.cert } })
    const res = await request(`${url}/proxied`, { dispatcher })
    expect(await res.body.text()).toBe('proxied 1')
    await dispatcher.close()
    const hit = await get(url, '/proxied')
    expect([hit.status, hit.cache, hit.body]).toEqual([200, 'HIT', 'proxied 1'])
    // Stale: revalidated over HTTP/1.1 for an HTTP/2 client.
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const revalidated = await get(url, '/proxied')
    expect([revalidated.status, revalidated.cache, revalidated.body]).toEqual([200, 'MISS', 'proxied 2'])
    expect((await get(url, '/proxied')).body).toBe('proxied 2')
  })

  it('never stores an answer that repeats a field HTTP/2 allows once: an HTTP/2 client is answered, the process lives', async () => {
    // HTTP/2 and HTTP/1.1 on one TLS port. Over HTTP/1.1 the route passes on an upstream's
    // Content-Language lines as they came (two of them: valid there, a list); over HTTP/2 it
    // joins them.
    const server = Fastify({ http2: true, https: { allowHTTP1: true, ...tls } })
    app = server
    await server.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024 }) })
    let n = 0
    server.get('/twice', async (req, reply) => {
      if (req.raw.httpVersionMajor === 1) {
        sendHttp1(reply, 200, { 'cache-control': 'public, max-age=60', 'content-type': 'text/plain', 'content-language': ['en', 'fr'] }, `twice ${++n}`)
        return
      }
      reply.header('cache-control', 'public, max-age=60').header('content-language', 'en, fr').type('text/plain')
      return `once ${++n}`
    })
    const url = await server.listen({ port: 0, host: '127.0.0.1' })
    // Filled over HTTP/1.1: passed through as the route sent it, not stored.
    const dispatcher = new Agent({ allowH2: false, connect: { ca: tls.cert } })
    const res = await request(`${url}/twice`, { dispatcher })
    expect(await res.body.text()).toBe('twice 1')
    expect(res.headers['content-language']).toEqual(['en', 'fr'])
    expect(res.headers['x-cache']).toBe('MISS')
    await dispatcher.close()
    // Over HTTP/2: not a hit on the stored head (Node would throw), the route answers.
    const h2 = await get(url, '/twice')
    expect([h2.status, h2.cache, h2.body]).toEqual([200, 'MISS', 'once 2'])
    // What the HTTP/2 client got was storable, and is served.
    expect(await get(url, '/twice')).toEqual({ status: 200, cache: 'HIT', body: 'once 2' })
  })

  it('sends a field HTTP/2 allows once only once: a revalidation\'s answer and the fields a 304 merged in', async () => {
    // A revalidation runs over HTTP/1.1 (fastify.inject), where this route repeats fields.
    const server = Fastify({ http2: true })
    app = server
    await server.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024 }) })
    let n = 0
    server.get('/full', async (req, reply) => {
      if (req.raw.httpVersionMajor === 1) {
        sendHttp1(reply, 200, { 'cache-control': 'max-age=1', 'content-type': 'text/plain', 'x-content-type-options': ['nosniff', 'nosniff'] }, `full ${++n}`)
        return
      }
      reply.header('cache-control', 'max-age=1').type('text/plain')
      return `full ${++n}`
    })
    server.get('/etag', async (req, reply) => {
      reply.header('cache-control', 'no-cache').header('etag', '"v1"').type('text/plain')
      if (req.raw.httpVersionMajor === 1 && req.headers['if-none-match'] === '"v1"') {
        sendHttp1(reply, 304, { etag: '"v1"', 'content-language': ['en', 'fr'], 'cache-control': 'no-cache' })
        return
      }
      return `etag ${++n}`
    })
    const url = await server.listen({ port: 0, host: '127.0.0.1' })
    expect((await get(url, '/full')).body).toBe('full 1')
    await new Promise((resolve) => setTimeout(resolve, 1100))
    // Stale: the route's HTTP/1.1 answer goes to the HTTP/2 client, X-Content-Type-Options once.
    expect(await get(url, '/full')).toEqual({ status: 200, cache: 'MISS', body: 'full 2' })
    expect(await get(url, '/full')).toEqual({ status: 200, cache: 'MISS', body: 'full 3' })
    // no-cache: every request revalidates; the 304 repeats Content-Language.
    expect(await get(url, '/etag')).toEqual({ status: 200, cache: 'MISS', body: 'etag 4' })
    expect(await get(url, '/etag')).toEqual({ status: 200, cache: 'REVALIDATED', body: 'etag 4' })
    // The merged response was not stored: the entry is gone, and the route answers again.
    expect(await get(url, '/etag')).toEqual({ status: 200, cache: 'MISS', body: 'etag 5' })
  })

  it('replaces a Date it cannot read rather than adding one: a hit over HTTP/2 has a single Date', async () => {
    const server = Fastify({ http2: true })
    app = server
    await server.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024 }) })
    let n = 0
    server.get('/iso-date', async (_req, reply) => {
      reply.header('cache-control', 'max-age=60').header('date', new Date().toISOString())
      return `dated ${++n}`
    })
    const url = await server.listen({ port: 0, host: '127.0.0.1' })
    expect((await get(url, '/iso-date')).body).toBe('dated 1')
    const hit = await get(url, '/iso-date')
    expect([hit.status, hit.cache, hit.body]).toEqual([200, 'HIT', 'dated 1'])
  })
})
