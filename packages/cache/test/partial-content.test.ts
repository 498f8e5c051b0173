import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { get, start, type Started } from './helpers.ts'

const BODY = 'abcdefghij'

/** What a route that honours single byte ranges answers (as @fastify/static does), for the test's expectations too. */
function answer (range: string | undefined): { status: number, text: string, contentRange?: string } {
  const m = range === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(range)
  if (!m || (m[1] === '' && m[2] === '')) return { status: 200, text: BODY }
  const size = BODY.length
  const first = m[1] === '' ? Math.max(0, size - Number(m[2])) : Number(m[1])
  const last = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  // An invalid range (last before first) is ignored (RFC 9110 14.2); one past the end is unsatisfiable.
  if (m[1] !== '' && m[2] !== '' && Number(m[2]) < first) return { status: 200, text: BODY }
  if (first >= size) return { status: 416, text: '', contentRange: `bytes */${size}` }
  return { status: 206, text: BODY.slice(first, last + 1), contentRange: `bytes ${first}-${last}/${size}` }
}

function ranged (options: { etag?: string, cacheControl?: string, wholeCacheControl?: string, seen?: string[] } = {}) {
  return (app: Started['app'], count: (name: string) => number): void => {
    app.get('/*', async (req: FastifyRequest, reply: FastifyReply) => {
      count('file')
      const range = typeof req.headers.range === 'string' ? req.headers.range : undefined
      options.seen?.push(`${range ?? '-'} ${String(req.headers['if-range'] ?? '-')}`)
      const ifRange = req.headers['if-range']
      const a = answer(ifRange !== undefined && ifRange !== options.etag ? undefined : range)
      reply.code(a.status).header('cache-control', (a.status === 200 ? options.wholeCacheControl : undefined) ?? options.cacheControl ?? 'max-age=60').header('accept-ranges', 'bytes')
      if (options.etag) reply.header('etag', options.etag)
      if (a.contentRange) reply.header('content-range', a.contentRange)
      return a.text
    })
  }
}

let s: Started | undefined
afterEach(async () => { await s?.app.close(); s = undefined })
const r = (range: string, extra: Record<string, string> = {}): { headers: Record<string, string> } => ({ headers: { range, ...extra } })

describe('partial content (206)', () => {
  it('stores a 206 and answers the same range, and ranges inside it, from it', async () => {
    s = await start(ranged({ etag: '"v1"' }))
    const first = await get(`${s.url}/f`, r('bytes=2-6'))
    expect([first.status, first.text, first.headers.get('x-cache')]).toEqual([206, 'cdefg', 'MISS'])
    const again = await get(`${s.url}/f`, r('bytes=2-6'))
    expect([again.status, again.text, again.headers.get('x-cache'), again.headers.get('content-range')]).toEqual([206, 'cdefg', 'HIT', 'bytes 2-6/10'])
    const inside = await get(`${s.url}/f`, r('bytes=3-4'))
    expect([inside.status, inside.text, inside.headers.get('x-cache'), inside.headers.get('content-range')]).toEqual([206, 'de', 'HIT', 'bytes 3-4/10'])
    expect(s.runs.get('file')).toBe(1)
    // Bytes it does not hold, or an If-Range that names another version: the route answers.
    expect((await get(`${s.url}/f`, r('bytes=1-4'))).text).toBe('bcde')
    expect((await get(`${s.url}/f`, r('bytes=-2'))).text).toBe('ij')
    expect((await get(`${s.url}/f`, r('bytes=3-4', { 'if-range': '"v0"' }))).status).toBe(200)
    expect(s.runs.get('file')).toBe(4)
  })

  it('answers an open-ended range from a stored part that holds its first byte, up to where the part ends; a suffix only from a part that reaches the end', async () => {
    s = await start(ranged({ etag: '"v1"' }))
    expect((await get(`${s.url}/f`, r('bytes=2-6'))).text).toBe('cdefg')
    const open = await get(`${s.url}/f`, r('bytes=4-'))
    expect([open.status, open.text, open.headers.get('content-range'), open.headers.get('x-cache')]).toEqual([206, 'efg', 'bytes 4-6/10', 'HIT'])
    expect(s.runs.get('file')).toBe(1)
    // The last bytes of the representation, which the part does not reach: the route answers,
    // and its 206 (bytes 7-9) is the part kept from now on.
    expect((await get(`${s.url}/f`, r('bytes=-3'))).headers.get('x-cache')).toBe('MISS')
    const suffix = await get(`${s.url}/f`, r('bytes=-2'))
    expect([suffix.text, suffix.headers.get('content-range'), suffix.headers.get('x-cache')]).toEqual(['ij', 'bytes 8-9/10', 'HIT'])
    // A first byte the part does not hold: the route answers.
    expect((await get(`${s.url}/f`, r('bytes=1-'))).text).toBe('bcdefghij')
    expect(s.runs.get('file')).toBe(3)
  })

  it('completes a stored first part by asking the route for the rest, with If-Range', async () => {
    const seen: string[] = []
    s = await start(ranged({ etag: '"v1"', seen }))
    await get(`${s.url}/g`, r('bytes=0-3'))
    const whole = await get(`${s.url}/g`)
    expect([whole.status, whole.text, whole.headers.get('content-range')]).toEqual([200, BODY, null])
    expect(seen).toEqual(['bytes=0-3 -', 'bytes=4- "v1"'])
    const hit = await get(`${s.url}/g`)
    expect([hit.text, hit.headers.get('x-cache')]).toEqual([BODY, 'HIT'])
    expect(s.runs.get('file')).toBe(2)
  })

  it('never joins parts it cannot prove are one version: no strong ETag means asking for the whole response', async () => {
    const seen: string[] = []
    s = await start(ranged({ etag: 'W/"v1"', seen }))
    await get(`${s.url}/h`, r('bytes=0-3'))
    const whole = await get(`${s.url}/h`)
    expect([whole.status, whole.text]).toEqual([200, BODY])
    expect(seen).toEqual(['bytes=0-3 -', 'bytes=4- -', '- -'])
  })

  it('drops a part that could not be joined, so a stored part never makes every request run the route twice', async () => {
    const seen: string[] = []
    s = await start(ranged({ etag: 'W/"v1"', wholeCacheControl: 'no-store', seen }))
    await get(`${s.url}/m`, r('bytes=0-3'))
    expect((await get(`${s.url}/m`)).text).toBe(BODY)
    expect((await get(`${s.url}/m`)).text).toBe(BODY)
    expect(seen).toEqual(['bytes=0-3 -', 'bytes=4- -', '- -', '- -'])
  })

  it('keeps parts produced for credentials, or without freshness, out of the store', async () => {
    s = await start(ranged({ etag: '"v1"' }))
    await get(`${s.url}/i`, r('bytes=0-3', { cookie: 'sid=alice' }))
    expect((await get(`${s.url}/i`, r('bytes=0-3'))).headers.get('x-cache')).toBe('MISS')
    // The anonymous part now stored never answers a request with credentials.
    expect((await get(`${s.url}/i`, r('bytes=0-3', { authorization: 'Bearer bob' }))).headers.get('x-cache')).toBe('MISS')
    expect(s.runs.get('file')).toBe(3)
    await s.app.close()
    s = await start(ranged({ etag: '"v1"', cacheControl: 'no-cache' }))
    await get(`${s.url}/j`, r('bytes=0-3'))
    expect((await get(`${s.url}/j`, r('bytes=0-3'))).headers.get('x-cache')).toBe('MISS')
  })

  it('drops the stored part with the URL: purge by key and a successful unsafe request', async () => {
    s = await start((app, count) => {
      ranged({ etag: '"v1"' })(app, count)
      app.post('/*', async () => 'ok')
    })
    await get(`${s.url}/k`, r('bytes=0-3'))
    expect((await get(`${s.url}/k`, r('bytes=0-3'))).headers.get('x-cache')).toBe('HIT')
    s.app.httpCache.purge({ keys: [s.app.httpCache.keyOf({ url: '/k', headers: { host: new URL(s.url).host }, encrypted: false })] })
    expect((await get(`${s.url}/k`, r('bytes=0-3'))).headers.get('x-cache')).toBe('MISS')
    await get(`${s.url}/k`, r('bytes=0-3'))
    expect((await get(`${s.url}/k`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } })).status).toBe(200)
    expect((await get(`${s.url}/k`, r('bytes=0-3'))).headers.get('x-cache')).toBe('MISS')
  })

  it('never stores what a HEAD with Range gets: a route that ignores Range answers 200 without a body', async () => {
    s = await start((app, count) => {
      app.get('/*', async (_req: FastifyRequest, reply: FastifyReply) => {
        count('page')
        reply.header('cache-control', 'max-age=60')
        return BODY
      })
    })
    expect((await get(`${s.url}/n`, { method: 'HEAD', headers: { range: 'bytes=0-3' } })).status).toBe(200)
    const whole = await get(`${s.url}/n`)
    expect([whole.status, whole.text]).toEqual([200, BODY])
    expect((await get(`${s.url}/n`)).text).toBe(BODY)
  })

  it('property: whatever ranges are asked in whatever order, each answer is what the route would send', async () => {
    s = await start(ranged({ etag: '"v1"' }))
    const url = s.url
    const spec = fc.oneof(
      fc.tuple(fc.nat(12), fc.nat(12)).map(([a, b]) => `bytes=${a}-${b}`),
      fc.nat(12).map((a) => `bytes=${a}-`),
      fc.integer({ min: 1, max: 12 }).map((n) => `bytes=-${n}`),
      fc.constant(undefined),
    )
    let n = 0
    await fc.assert(fc.asyncProperty(fc.array(spec, { minLength: 1, maxLength: 5 }), async (ranges) => {
      const path = `/p${n++}`
      for (const range of ranges) {
        const got = await get(`${url}${path}`, range === undefined ? {} : r(range))
        const want = answer(range)
        const label = `${ranges.join(' | ')}: ${range}`
        const held = /^bytes (\d+)-(\d+)\/10$/.exec(got.headers.get('content-range') ?? '')
        if (got.status === 206 && range !== undefined && /^bytes=\d+-$/.test(range) && held) {
          // An open-ended range may get the bytes a stored part holds from its first one on,
          // as its Content-Range says: never other bytes, never a later start.
          const [first, last] = [Number(held[1]), Number(held[2])]
          expect([got.status, first, got.text], label).toEqual([want.status, Number(range.slice(6, -1)), BODY.slice(first, last + 1)])
          expect(last, label).toBeLessThanOrEqual(BODY.length - 1)
        } else {
          expect([got.status, got.text, got.headers.get('content-range')], label).toEqual([want.status, want.text, want.contentRange ?? null])
        }
      }
    }), { numRuns: 60 })
  })
})
