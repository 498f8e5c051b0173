import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { createSharedStore, type Fleet, startFleet } from '@spindle/cache'
import { get, start, type Started } from '../helpers.ts'
import { type RedisServer, startRedis } from './redis-server.ts'

// httpCache in two "processes" (two servers, each with its own shared memory and fleet
// agent) on one real redis-server.
let redis: RedisServer
const fleets: Fleet[] = []
const servers: Started[] = []

beforeAll(async () => { redis = await startRedis() })
afterAll(async () => {
  for (const s of servers) await s.app.close()
  for (const f of fleets) await f.close()
  await redis?.stop()
})

async function member (prefix: string): Promise<Started> {
  const fleet = await startFleet({ url: redis.url, prefix, memory: createSharedStore({ maxBytes: 4 * 1024 * 1024, maxTags: 256 }), logger: { info () {}, warn () {} } })
  fleets.push(fleet)
  const server = await start((app, count) => {
    app.get('/page', async (_request, reply) => {
      reply.header('cache-control', 's-maxage=60').header('cache-tag', 'pages')
      return `page render ${count('page')}`
    })
    app.get('/private', async (_request, reply) => {
      reply.header('cache-control', 'no-store')
      return `private ${count('private')}`
    })
  }, { store: fleet.store })
  servers.push(server)
  return server
}

// Every process of a fleet sees the site's own Host (the key includes it), not its own port.
const site = { headers: { host: 'www.example.test' } }

describe('httpCache with a fleet store', () => {
  it('serves what another process stored, and a purge on one process reaches the other', async () => {
    const prefix = `http-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    const first = await get(`${a.url}/page`, site)
    expect(first.headers.get('x-cache')).toBe('MISS')
    let fromB = await get(`${b.url}/page`, site)
    for (let i = 0; i < 50 && fromB.headers.get('x-cache') !== 'HIT'; i++) fromB = await get(`${b.url}/page`, site)
    expect(fromB.headers.get('x-cache')).toBe('HIT')
    expect(fromB.text).toBe(first.text)
    expect(b.runs.get('page') ?? 0).toBe(0)

    b.app.httpCache.purge({ tags: ['pages'] })
    let again = await get(`${a.url}/page`, site)
    for (let i = 0; i < 100 && again.headers.get('x-cache') === 'HIT'; i++) again = await get(`${a.url}/page`, site)
    expect(again.headers.get('x-cache')).toBe('MISS')
    expect(a.runs.get('page')).toBe(2)
  })

  it('an uncacheable route on one process does not hold up the other', async () => {
    const prefix = `http-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    expect((await get(`${a.url}/private`, site)).text).toBe('private 1')
    const started = Date.now()
    expect((await get(`${b.url}/private`, site)).text).toBe('private 1')
    expect(Date.now() - started).toBeLessThan(1000)
  })
})
