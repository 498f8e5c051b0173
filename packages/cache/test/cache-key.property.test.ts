import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import { createSharedStore, httpCache, type SharedStore } from '@spindle/cache'
import { parseRaw, sendRaw } from './helpers.ts'

// The same app twice, one behind httpCache. Each answer names what the router and the app
// saw (route, params, host, forwarded host, and the cookie where the route uses it), so a
// cached answer equal to the uncached one means no other request's response was reused.
function routes (app: FastifyInstance): void {
  const echo = (publicRoute: boolean) => async (req: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => {
    reply.header('cache-control', publicRoute ? 'public, max-age=600' : 'max-age=600')
    return JSON.stringify({
      route: req.routeOptions.url,
      params: req.params,
      query: req.query,
      host: URL.canParse(`http://${req.headers.host ?? ''}/`) ? new URL(`http://${req.headers.host ?? ''}/`).host : `unparsed ${String(req.headers.host)}`,
      forwarded: req.headers['x-forwarded-host'] ?? null,
      // Forwarded-URL headers an app behind a proxy builds its links from.
      via: [req.headers.forwarded, req.headers['x-forwarded-proto'], req.headers['x-original-url']],
      method: req.method,
      who: publicRoute ? null : (req.headers.cookie ?? req.headers.authorization ?? null),
    })
  }
  app.get('/*', echo(false))
  // Shared variants by language and cookie, and a route that is private for a cookie; both
  // with validators, so conditional requests meet stored responses.
  app.get('/vary/:v', async (req, reply) => {
    reply.header('cache-control', 'public, max-age=600')
    reply.header('vary', 'accept-language, cookie')
    reply.header('etag', '"v' + String((req.params as { v: string }).v) + (req.headers['accept-language'] ?? '') + (req.headers.cookie ?? '') + '"')
    return JSON.stringify({ lang: req.headers['accept-language'] ?? null, cookie: req.headers.cookie ?? null, v: (req.params as { v: string }).v })
  })
  app.get('/priv/:v', async (req, reply) => {
    reply.header('cache-control', req.headers.cookie ? 'private, max-age=600' : 'max-age=600')
    reply.header('etag', '"p' + (req.headers.cookie ?? '') + '"')
    return JSON.stringify({ cookie: req.headers.cookie ?? null })
  })
  app.get('/blog/:post', echo(false))
  // Every POST drops what was stored for its URL; none of these names itself in Content-Location, so none fills it.
  app.post('/*', async (req, reply) => {
    reply.header('cache-control', 'max-age=600')
    return JSON.stringify({ posted: req.url, who: req.headers.cookie ?? null })
  })
  app.get('/pub/:page', echo(true))
}

let cached: FastifyInstance
let plain: FastifyInstance
let store: SharedStore
beforeAll(async () => {
  store = createSharedStore({ maxBytes: 8 * 1024 * 1024, maxTags: 256 })
  cached = Fastify()
  await cached.register(httpCache, { store, statusHeader: 'x-cache' })
  routes(cached)
  plain = Fastify()
  routes(plain)
  await cached.listen({ port: 0, host: '127.0.0.1' })
  await plain.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await cached.close()
  await plain.close()
})

interface Req { method: string, host: string, path: string, headers: Array<[string, string]> }

/** One request written byte for byte (HTTP clients normalise targets and Host themselves). */
async function send (app: FastifyInstance, r: Req): Promise<{ status: number, cache: string, body: string, etag: string }> {
  let out = `${r.method} ${r.path} HTTP/1.1\r\nhost: ${r.host}\r\nconnection: close\r\n${r.method === 'POST' ? 'content-length: 0\r\n' : ''}`
  for (const [n, v] of r.headers) out += `${n}: ${v}\r\n`
  return parseRaw(await sendRaw((app.server.address() as { port: number }).port, out + '\r\n'))
}

// Small alphabets, so that random sequences often spell one resource several ways. The
// request target may also come in absolute form, or as a path no URL parser reads alike.
const segment = fc.constantFrom('vary', 'priv', 'vary', 'priv', 'a\\b', 'blog', 'b%6cog', 'Blog', 'post-1', 'pub', '%70ub', '..', '%2e%2e', '.', 'x%2Fy', 'x', '')
const lead = fc.constantFrom('/', '/', '/', '/', 'http://app.com/', 'http://evil.com/', '//', '/;x/')
const path = fc.tuple(lead, fc.array(segment, { minLength: 1, maxLength: 2 }), fc.constantFrom('', '', '?a=1', '?a=%31', '?a=1&a=2', '#f'))
  .map(([first, segs, query]) => first + segs.join('/') + query)
const host = fc.constantFrom('app.com', 'app.com', 'APP.com:80', 'app.com:8080', 'app.com/blog', 'app.com?x', '%61pp.com', '[::1]', 'app.com.', 'app.com:080', 'app.com:', 'app.com, evil.com')
const headers = fc.constantFrom<Array<[string, string]>>(
  [], [], [], [['cookie', 'session=alice']], [['cookie', 'session=bob']], [['cookie', '']], [['authorization', 'Bearer t']],
  [['x-forwarded-host', 'evil.com']], [['x-forwarded-proto', 'http']], [['forwarded', 'host=evil.com']], [['x-original-url', '/pub/x']],
  [['x-http-method-override', 'POST']], [['host', 'evil.com']],
  [['accept-language', 'fr']], [['accept-language', 'en, fr;q=0.5']], [['accept-language', 'EN']], [['accept-language', 'fr'], ['cookie', 'session=alice']],
  [['if-none-match', '"p"']], [['if-none-match', '"psession=alice"'], ['cookie', 'session=bob']], [['if-none-match', '*']], [['range', 'bytes=0-3']], [['cache-control', 'max-age=0']], [['cache-control', 'only-if-cached']], [['pragma', 'no-cache']],
  [['if-modified-since', 'Tue, 01 Jan 2030 00:00:00 GMT']],
)
const method = fc.constantFrom('GET', 'GET', 'GET', 'GET', 'GET', 'HEAD', 'POST')
const request = fc.record({ method, host, path, headers })
/**
 * A few requests, then an order to send them in with repeats: a cache is tested by the
 * requests that come after it stored something, and random requests drawn one by one almost
 * never repeat a key. Each repeat may take another request's headers, so a stored response
 * meets other credentials and forwarded headers for the same target.
 */
const sequence = fc.array(request, { minLength: 2, maxLength: 4 }).chain((pool) =>
  fc.array(fc.tuple(fc.nat(pool.length - 1), fc.nat(pool.length - 1)), { minLength: 4, maxLength: 10 })
    .map((order) => order.map(([target, extra]) => ({ ...pool[target]!, headers: pool[extra]!.headers }))))

describe('httpCache key (property-based)', () => {
  it('never answers a request with a response the app would not have given it', async () => {
    const outcomes: Record<string, number> = {}
    await fc.assert(fc.asyncProperty(sequence, async (requests) => {
      store.clear()
      for (const r of requests) {
        const got = await send(cached, r)
        outcomes[got.cache || got.status] = (outcomes[got.cache || got.status] ?? 0) + 1
        if (got.status === 400) continue
        const want = await send(plain, r)
        const label = `${r.host} ${r.path} ${JSON.stringify(r.headers)} (${got.cache})`
        // Where HTTP lets a cache answer otherwise than the route (a 504 to only-if-cached, a
        // 304 to a validator, a 206 from a stored 200), the answer is checked against the
        // route's own instead.
        const h = Object.fromEntries(r.headers)
        if (got.status === 504 && h['cache-control'] === 'only-if-cached') continue
        if (got.status === 304 && h['if-none-match'] === undefined) {
          // If-Modified-Since against a stored response without Last-Modified is judged by its Date (RFC 9111 4.3.2).
          expect([want.status, h['if-modified-since'] !== undefined], label).toEqual([200, true])
          continue
        }
        if (got.status === 304) {
          const inm = h['if-none-match'] ?? ''
          expect([want.status, inm === '*' || inm.split(',').map((x) => x.trim()).includes(want.etag), got.etag], label).toEqual([200, true, want.etag])
          continue
        }
        if (got.status === 206) {
          expect([want.status, got.body], label).toEqual([200, want.body.slice(0, 4)])
          continue
        }
        expect({ status: got.status, body: got.body }, label).toEqual({ status: want.status, body: want.body })
      }
    }), { numRuns: 300 })
    // The property says something only if stored responses were offered to later requests
    // (only requests with a canonical target and Host fill the cache: about 80 hits in 300 runs).
    expect(outcomes.HIT ?? 0, JSON.stringify(outcomes)).toBeGreaterThan(40)
  }, 120_000)

  it('refuses exactly the Hosts that are not host[:port]', async () => {
    for (const h of ['app.com/blog', 'app.com?x', 'x@app.com']) expect((await send(cached, { method: 'GET', host: h, path: '/', headers: [] })).status, h).toBe(400)
    for (const h of ['app.com', 'APP.com:80', '[::1]', '127.0.0.1:3000', '']) expect((await send(cached, { method: 'GET', host: h, path: '/', headers: [] })).status, h).toBe(200)
  })
})
