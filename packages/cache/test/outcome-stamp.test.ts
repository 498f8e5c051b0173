import { afterEach, describe, expect, it } from 'vitest'
import { kCacheOutcome } from '@spindle/cache'
import { get, start, type Started } from './helpers.ts'

let s: Started | undefined
afterEach(async () => { await s?.app.close(); s = undefined })

describe('kCacheOutcome', () => {
  it('marks each raw request with what the cache did, also when no status header is sent', async () => {
    const seen: Array<string | undefined> = []
    s = await start((app) => {
      app.addHook('onResponse', (request, _reply, done) => {
        seen.push((request.raw as { [kCacheOutcome]?: string })[kCacheOutcome])
        done()
      })
      app.get('/page', async (_request, reply) => { reply.header('cache-control', 'max-age=60'); return 'page' })
      app.get('/never', { config: { cache: false } }, async () => 'never')
    }, { statusHeader: false })
    const first = await get(`${s.url}/page`)
    expect(first.headers.get('x-cache')).toBeNull()
    await get(`${s.url}/page`)
    // A request with a cookie is passed to the route (a response without public is not shared).
    await get(`${s.url}/page`, { headers: { cookie: 'session=1' } })
    await get(`${s.url}/never`)
    expect(seen).toEqual(['MISS', 'HIT', 'MISS', 'BYPASS'])
  })
})
