import { afterEach, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { connect, type ClientHttp2Session } from 'node:http2'
import Fastify from 'fastify'
import { Agent, request } from 'undici'
import { createSharedStore, httpCache } from '@spindle/cache'
import { get, sleep, start, type Started } from './helpers.ts'

// What a revalidation (conditional or in the background) runs and stores: the route must see
// the request the entry is keyed by, and what it answers must be storable for everyone.

let s: Started | undefined
let app: { close: () => Promise<unknown> } | undefined
let session: ClientHttp2Session | undefined
afterEach(async () => {
  session?.close()
  session = undefined
  await s?.app.close()
  s = undefined
  await app?.close()
  app = undefined
})

const tls = { key: readFileSync(new URL('./fixtures/tls/test.key', import.meta.url)), cert: readFileSync(new URL('./fixtures/tls/test.crt', import.meta.url)) }

/** A route whose every answer is stale at once (Age past max-age) within stale-while-revalidate: each request refreshes it in the background. */
function staleRoute (): (req: { protocol: string, host: string }, reply: { header: (name: string, value: string) => unknown }) => Promise<string> {
  let n = 0
  return async (req, reply) => {
    reply.header('cache-control', 'max-age=1, stale-while-revalidate=60')
    reply.header('age', '5')
    return `<link rel=canonical href="${req.protocol}://${req.host}/page"> render ${++n}`
  }
}

/** Requests `path` until its body is no longer `first` (a background refresh stored another), at most 2 s. */
async function untilRefreshed (fetch: () => Promise<string>, first: string): Promise<string> {
  let body = await fetch()
  for (let i = 0; i < 100 && body === first; i++) {
    await sleep(20)
    body = await fetch()
  }
  return body
}

function h2get (url: string, path: string, headers: Record<string, string> = {}): Promise<string> {
  session ??= connect(url)
  return new Promise((resolve, reject) => {
    const stream = session!.request({ ':path': path, ...headers })
    let body = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => { body += chunk })
    stream.on('end', () => resolve(body))
    stream.on('error', reject)
  })
}

/** What the store holds for the URL, without running the route: only-if-cached accepting any staleness. */
async function stored (base: string, path: string, host: string): Promise<{ status: number, headers: Headers }> {
  const res = await get(base + path, { headers: { host, 'cache-control': 'only-if-cached, max-stale' } })
  return { status: res.status, headers: res.headers }
}

describe('httpCache revalidation: the route sees the request the entry is keyed by', () => {
  it('over HTTP/2, the route is run with the request\'s :authority as its Host (not localhost:80)', async () => {
    const server = Fastify({ http2: true })
    app = server
    await server.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024 }) })
    server.get('/page', staleRoute())
    const url = await server.listen({ port: 0, host: '127.0.0.1' })
    const fetch = (): Promise<string> => h2get(url, '/page', { ':authority': 'app.test' })
    const first = await fetch()
    expect(first).toBe('<link rel=canonical href="http://app.test/page"> render 1')
    const refreshed = await untilRefreshed(fetch, first)
    expect(refreshed).toBe('<link rel=canonical href="http://app.test/page"> render 2')
  })

  it('over TLS, the route is run as https, the scheme of the key (not http)', async () => {
    const server = Fastify({ https: tls })
    app = server
    await server.register(httpCache, { store: createSharedStore({ maxBytes: 4 * 1024 * 1024 }) })
    server.get('/page', staleRoute())
    const url = await server.listen({ port: 0, host: '127.0.0.1' })
    const dispatcher = new Agent({ connect: { ca: tls.cert } })
    const fetch = async (): Promise<string> => await (await request(url + '/page', { headers: { host: 'app.test' }, dispatcher })).body.text()
    try {
      const first = await fetch()
      expect(first).toBe('<link rel=canonical href="https://app.test/page"> render 1')
      const refreshed = await untilRefreshed(fetch, first)
      expect(refreshed).toBe('<link rel=canonical href="https://app.test/page"> render 2')
    } finally {
      await dispatcher.close()
    }
  })
})

describe('httpCache revalidation: what a 304 may write into the stored response', () => {
  it('a request with a Host spelled otherwise revalidates for itself: its 304\'s fields never reach the stored entry', async () => {
    s = await start((server) => {
      server.get('/r', async (req, reply) => {
        reply.header('cache-control', 'max-age=1').header('age', '5').header('etag', '"v1"')
          .header('link', `<http://${req.headers.host}/style.css>; rel=preload`)
        if (req.headers['if-none-match'] === '"v1"') return reply.code(304).send()
        return 'body'
      })
    })
    expect((await get(s.url + '/r', { headers: { host: 'app.test' } })).headers.get('x-cache')).toBe('MISS')
    const odd = await get(s.url + '/r', { headers: { host: 'APP.test:80' } })
    expect(odd.headers.get('x-cache')).toBe('REVALIDATED')
    expect(odd.headers.get('link')).toBe('<http://APP.test:80/style.css>; rel=preload')
    const kept = await stored(s.url, '/r', 'app.test')
    expect(kept.status).toBe(200)
    expect(kept.headers.get('link')).toBe('<http://app.test/style.css>; rel=preload')
  })

  it('a 304 that says private drops the stored entry; fields a 304 names in private="..." are not stored', async () => {
    s = await start((server) => {
      server.get('/private', async (req, reply) => {
        reply.header('etag', '"v1"').header('age', '5')
        if (req.headers['if-none-match'] !== '"v1"') return reply.header('cache-control', 'max-age=1').send('body')
        return reply.code(304).header('cache-control', 'private, max-age=1').header('x-visitor', 'visitor-1').send()
      })
      server.get('/field', async (req, reply) => {
        reply.header('etag', '"v1"').header('age', '5')
        if (req.headers['if-none-match'] !== '"v1"') return reply.header('cache-control', 'max-age=1').send('body')
        return reply.code(304).header('cache-control', 'max-age=1, private="x-visitor"').header('x-visitor', 'visitor-1').send()
      })
    })
    for (const path of ['/private', '/field']) {
      expect((await get(s.url + path)).headers.get('x-cache')).toBe('MISS')
      const revalidated = await get(s.url + path)
      expect(revalidated.headers.get('x-cache')).toBe('REVALIDATED')
      // The client that revalidated gets the 304's fields: they are its own.
      expect(revalidated.headers.get('x-visitor')).toBe('visitor-1')
    }
    expect((await stored(s.url, '/private', new URL(s.url).host)).status).toBe(504)
    const field = await stored(s.url, '/field', new URL(s.url).host)
    expect(field.status).toBe(200)
    expect(field.headers.get('x-visitor')).toBeNull()
  })
})

describe('httpCache: a 412 answers one request\'s preconditions', () => {
  it('is never stored, whatever freshness it carries', async () => {
    s = await start((server, count) => {
      server.get('/doc', async (req, reply) => {
        reply.header('cache-control', 's-maxage=60')
        if (req.headers['if-match'] !== undefined) return reply.code(412).send('precondition failed')
        return `doc ${count('doc')}`
      })
    })
    expect((await get(s.url + '/doc', { headers: { 'if-match': '"other"' } })).status).toBe(412)
    const next = await get(s.url + '/doc')
    expect([next.status, next.text]).toEqual([200, 'doc 1'])
  })
})
