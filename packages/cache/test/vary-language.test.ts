import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { get, start, type Started } from './helpers.ts'

// The app's own negotiation: the available language with the highest weight, ties broken
// by name (RFC 9110 12.4.2: equal weights are equal preferences, whatever the order).
const AVAILABLE = ['de', 'en', 'fr']
function choose (acceptLanguage: string | undefined): string {
  const ranges = (acceptLanguage ?? '').split(',').map((item) => {
    const [tag = '', ...params] = item.trim().split(';').map((p) => p.trim())
    const q = params.find((p) => p.startsWith('q='))
    return { tag: tag.toLowerCase(), q: q === undefined ? 1 : Number(q.slice(2)) }
  }).filter((r) => AVAILABLE.includes(r.tag) && r.q > 0)
  ranges.sort((a, b) => b.q - a.q || a.tag.localeCompare(b.tag))
  return ranges[0]?.tag ?? 'en'
}

let s: Started | undefined
afterEach(async () => { await s?.app.close(); s = undefined })

function negotiating (extraVary = '') {
  return (app: Started['app'], count: (name: string) => number): void => {
    app.get('/*', async (req, reply) => {
      const language = choose(req.headers['accept-language'])
      reply.header('cache-control', 'max-age=600').header('vary', `Accept-Language${extraVary}`).header('content-language', language)
      return `${language} ${String(req.headers['x-tenant'] ?? '-')} ${count(req.url)}`
    })
  }
}

describe('Vary: Accept-Language', () => {
  it('matches lists that say the same thing: order among equal weights, case and spaces do not matter', async () => {
    s = await start(negotiating())
    expect((await get(`${s.url}/a`, { headers: { 'accept-language': 'en, de' } })).text).toBe('de - 1')
    for (const same of ['de, en', 'eN, De', ' en ,   de', 'de;q=1, en;q=1.0']) {
      const res = await get(`${s.url}/a`, { headers: { 'accept-language': same } })
      expect(res.headers.get('x-cache'), same).toBe('HIT')
      expect(res.text).toBe('de - 1')
    }
  })

  it('keeps lists with different weights apart, unless the stored variant declares the language the request prefers', async () => {
    s = await start(negotiating())
    expect((await get(`${s.url}/b`, { headers: { 'accept-language': 'en, de;q=0.5' } })).text).toBe('en - 1')
    // Prefers de: the stored en variant must not answer it.
    expect((await get(`${s.url}/b`, { headers: { 'accept-language': 'en;q=0.5, de' } })).text).toBe('de - 2')
    // Prefers de above all, other weights differ: the stored variant in de (Content-Language) answers it.
    const select = await get(`${s.url}/b`, { headers: { 'accept-language': 'fr;q=0.5, de;q=1.0' } })
    expect(select.headers.get('x-cache')).toBe('HIT')
    expect(select.text).toBe('de - 2')
    // A tie at the top, or a wildcard, selects nothing: the route runs.
    expect((await get(`${s.url}/b`, { headers: { 'accept-language': 'fr, de' } })).text).toBe('de - 3')
    expect((await get(`${s.url}/b`, { headers: { 'accept-language': '*' } })).text).toBe('en - 4')
    // An unparsable list is compared as received, never merged.
    expect((await get(`${s.url}/b`, { headers: { 'accept-language': 'de;q=2' } })).text).toBe('de - 5')
    expect((await get(`${s.url}/b`, { headers: { 'accept-language': 'de;q=2' } })).text).toBe('de - 5')
  })

  it('never lets the language reach across the other Vary fields, nor a request with credentials', async () => {
    s = await start(negotiating(', X-Tenant'))
    expect((await get(`${s.url}/c`, { headers: { 'accept-language': 'de', 'x-tenant': 'a' } })).text).toBe('de a 1')
    expect((await get(`${s.url}/c`, { headers: { 'accept-language': 'de, fr;q=0.2', 'x-tenant': 'a' } })).text).toBe('de a 1')
    expect((await get(`${s.url}/c`, { headers: { 'accept-language': 'de, fr;q=0.2', 'x-tenant': 'b' } })).text).toBe('de b 2')
    expect((await get(`${s.url}/c`, { headers: { 'accept-language': 'de', 'x-tenant': 'a', cookie: 'sid=1' } })).text).toBe('de a 3')
  })

  it('property: a request answered from the cache gets what the app would have chosen for it', async () => {
    s = await start(negotiating())
    const url = s.url
    const range = fc.record({
      tag: fc.constantFrom('en', 'EN', 'de', 'De', 'fr', 'it', '*'),
      q: fc.option(fc.constantFrom('1', '0.9', '0.5', '0.5', '0', '1.0'), { nil: undefined }),
    })
    const list = fc.array(range, { minLength: 0, maxLength: 4 }).map((rs) => rs.map((r) => r.q === undefined ? r.tag : `${r.tag};q=${r.q}`).join(', '))
    let n = 0
    await fc.assert(fc.asyncProperty(fc.array(list, { minLength: 2, maxLength: 4 }), async (lists) => {
      const path = `/p${n++}`
      for (const value of lists) {
        const res = await get(`${url}${path}`, { headers: value === '' ? {} : { 'accept-language': value } })
        expect(res.text.split(' ')[0], `${lists.join(' | ')}: ${value}`).toBe(choose(value === '' ? undefined : value))
      }
    }), { numRuns: 60 })
  })
})
