import { afterAll, beforeAll, expect, it } from 'vitest'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import { createSharedStore, httpCache, type SharedStore } from '@spindle/cache'
import { sendRaw } from './helpers.ts'

// Whatever headers a client sends and a route answers with (malformed directives, dates,
// ages, validators, ranges, Vary lists, statuses), httpCache never answers with a 5xx of its
// own and never leaves a request unanswered. Each request names the response it gets:
// `x-status`, and `x-r-<name>: <value>` for each response header.

let cached: FastifyInstance
let store: SharedStore
let served = 0
beforeAll(async () => {
  store = createSharedStore({ maxBytes: 8 * 1024 * 1024, maxTags: 256 })
  cached = Fastify()
  await cached.register(httpCache, { store, statusHeader: 'x-cache' })
  cached.all('/*', async (req, reply) => {
    // The response's headers come from the request: x-r-<name>: <value>.
    for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-r-') && typeof v === 'string') reply.header(k.slice(4), v)
    const status = parseInt(String(req.headers['x-status'] ?? 200), 10)
    reply.code(status)
    return status === 204 || status === 304 ? undefined : `body ${served++}`
  })
  await cached.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => { await cached.close() })

/** One request written byte for byte; the whole answer, 'TIMEOUT' or 'ERR'. */
const send = (raw: string): Promise<string> => sendRaw((cached.server.address() as { port: number }).port, raw)
const token = fc.constantFrom('max-age', 's-maxage', 'no-cache', 'no-store', 'private', 'public', 'must-revalidate', 'proxy-revalidate', 'immutable', 'stale-while-revalidate', 'stale-if-error', 'only-if-cached', 'max-stale', 'min-fresh', 'no-transform', 'x')
const val = fc.constantFrom('', '=0', '=1', '=60', '=-1', '="10"', '=1e9', '=99999999999999999999', '=abc', '=', '="a,b"', '=private', '="set-cookie"')
const cc = fc.tuple(fc.array(fc.tuple(token, val).map(([t, v]) => t + v), { maxLength: 4 }), fc.constantFrom(', ', ',', ' , ')).map(([xs, sep]) => xs.join(sep))
const date = fc.constantFrom('Tue, 01 Jan 2030 00:00:00 GMT', 'Thu, 01 Jan 1970 00:00:00 GMT', 'garbage', '0', '-1', '', 'Sun, 06 Nov 1994 08:49:37 GMT', 'Sunday, 06-Nov-94 08:49:37 GMT', 'Sun Nov  6 08:49:37 1994')
const header = fc.oneof(
  cc.map((v) => ['x-r-cache-control', v]),
  cc.map((v) => ['cache-control', v]),
  date.map((v) => ['x-r-expires', v]), date.map((v) => ['x-r-last-modified', v]), date.map((v) => ['x-r-date', v]),
  fc.constantFrom('0', '-5', '99999999999', 'abc', '1.5', '10, 20').map((v) => ['x-r-age', v]),
  fc.constantFrom('"a"', 'W/"a"', 'a', '"', '*', '"a", "b"').map((v) => ['x-r-etag', v]),
  fc.constantFrom('"a"', 'W/"a"', '*', '"a", W/"b"', 'garbage', '').map((v) => ['if-none-match', v]),
  date.map((v) => ['if-modified-since', v]), date.map((v) => ['if-unmodified-since', v]), date.map((v) => ['if-range', v]),
  fc.constantFrom('accept-language', 'cookie', '*', 'x-a, x-b', ',,,', 'ACCEPT-LANGUAGE', 'accept-encoding, accept-language').map((v) => ['x-r-vary', v]),
  fc.constantFrom('fr', 'en;q=0.5, fr', '*', 'x'.repeat(300), ';;;', 'en-US,en;q=0.9,de;q=0.8,*;q=0.1').map((v) => ['accept-language', v]),
  fc.constantFrom('fr', 'en', '', 'fr, en').map((v) => ['x-r-content-language', v]),
  fc.constantFrom('bytes=0-3', 'bytes=5-', 'bytes=-3', 'bytes=0-3,5-6', 'bytes=9-1', 'bytes=abc', 'items=0-1', 'bytes=0-99999999999999999999').map((v) => ['range', v]),
  fc.constantFrom('bytes 0-3/10', 'bytes */10', 'garbage').map((v) => ['x-r-content-range', v]),
  fc.constantFrom('200', '203', '204', '206', '300', '301', '304', '307', '404', '410', '429', '500', '503').map((v) => ['x-status', v]),
  fc.constantFrom('no-cache', 'x').map((v) => ['pragma', v]),
  fc.constantFrom('/a', 'http://a/x', '//evil/x', '%%%', '').map((v) => ['x-r-content-location', v]),
  fc.constantFrom('/a', 'http://a/x', '//evil/x', '%%%').map((v) => ['x-r-location', v]),
  fc.constantFrom('a=b').map((v) => ['x-r-set-cookie', v]),
  fc.constantFrom('a').map((v) => ['cookie', v]),
)
const req = fc.record({ method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'), path: fc.constantFrom('/a', '/b', '/a?x=1'),
  // Half of them fresh for a minute before their own headers say otherwise, so that many are stored.
  headers: fc.tuple(fc.boolean(), fc.array(header, { maxLength: 5 })).map(([fresh, hs]) => fresh ? [['x-r-cache-control', 'public, max-age=60'], ...hs] : hs) })
/** A few requests sent in an order with repeats, so that what one stored meets the others. */
const sequence = fc.array(req, { minLength: 1, maxLength: 3 }).chain((pool) =>
  fc.array(fc.nat(pool.length - 1), { minLength: 2, maxLength: 8 }).map((order) => order.map((i) => pool[i]!)))

it('never fails with a 5xx of its own, whatever the request and response headers', async () => {
  const fromCache: Record<string, number> = {}
  await fc.assert(fc.asyncProperty(sequence, async (rs) => {
    store.clear()
    for (const r of rs) {
      let raw = `${r.method} ${r.path} HTTP/1.1\r\nhost: app.com\r\nconnection: close\r\n`
      for (const [k, v] of r.headers) raw += `${k}: ${v}\r\n`
      if (r.method === 'POST') raw += 'content-length: 0\r\n'
      const res = await send(raw + '\r\n')
      const line = res.split('\r\n')[0] ?? ''
      const status = Number(line.split(' ')[1])
      const wanted = parseInt(r.headers.find(([k]) => k === 'x-status')?.[1] ?? '200', 10)
      const label = `${r.method} ${r.path} ${JSON.stringify(r.headers)} -> ${line}`
      expect(res === 'TIMEOUT' || res === 'ERR', label).toBe(false)
      const onlyIfCached = r.headers.some(([k, v]) => k === 'cache-control' && String(v).includes('only-if-cached'))
      // A 5xx the route sent with explicit freshness may be served again, briefly (maxErrorTtl).
      const fromStore = /\r\nx-cache: (HIT|STALE|REVALIDATED)/i.test(res)
      if (fromStore) fromCache[status] = (fromCache[status] ?? 0) + 1
      if (status >= 500 && !(status === 504 && onlyIfCached) && !fromStore) expect(status, label).toBe(wanted)
    }
  }), { numRuns: 300 })
  // Stored responses were offered to the requests that followed.
  expect(Object.values(fromCache).reduce((a, b) => a + b, 0), JSON.stringify(fromCache)).toBeGreaterThan(100)
}, 120_000)
