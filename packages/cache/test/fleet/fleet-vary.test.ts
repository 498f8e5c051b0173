import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { createSharedStore, type Fleet, startFleet } from '@spindle/cache'
import { get, sleep, start, type Started } from '../helpers.ts'
import { type RedisServer, startRedis } from './redis-server.ts'

// Responses with Vary across the fleet: two "processes" (each its own shared memory, fleet
// agent and server) on one real redis-server. The primary key of such a response holds only
// its Vary record; each variant (and language alias) is a key of its own in Redis.
let redis: RedisServer
let client: Redis
const fleets: Fleet[] = []
const servers: Started[] = []

beforeAll(async () => {
  redis = await startRedis()
  client = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true })
  await client.connect()
})
afterAll(async () => {
  for (const s of servers) await s.app.close()
  for (const f of fleets) await f.close()
  client?.disconnect()
  await redis?.stop()
})

const site = { host: 'www.example.test' }
// What a Next.js page says (next-server's base Vary).
const NEXT_VARY = 'RSC, Next-Router-State-Tree, Next-Router-Prefetch, Next-Router-Segment-Prefetch'

/** The language among en, de and fr the Accept-Language weighs most (ties: the first listed). */
function pick (value: string | undefined): string {
  let best = { tag: 'en', q: -1 }
  for (const part of (value ?? '').split(',')) {
    const [tag = '', q] = part.trim().split(';q=')
    const weight = q === undefined ? 1 : Number(q)
    if (['en', 'de', 'fr'].includes(tag) && weight > best.q) best = { tag, q: weight }
  }
  return best.tag
}

interface Member extends Started { fleet: Fleet }

async function member (prefix: string): Promise<Member> {
  const fleet = await startFleet({ url: redis.url, prefix, memory: createSharedStore({ maxBytes: 4 * 1024 * 1024, maxTags: 256 }), logger: { info () {}, warn () {} } })
  fleets.push(fleet)
  const server = await start((app, count) => {
    app.get('/page', async (request, reply) => {
      reply.header('cache-control', 's-maxage=60').header('vary', NEXT_VARY)
      return `page rsc=${request.headers.rsc ?? 'none'} ${count('page')}`
    })
    // s-maxage: may answer requests with credentials too.
    app.get('/lang', async (request, reply) => {
      const language = pick(request.headers['accept-language'])
      reply.header('cache-control', 's-maxage=60').header('vary', 'accept-language').header('content-language', language)
      return `lang ${language} ${count('lang')}`
    })
    // max-age only: never answers a request with credentials.
    app.get('/plain', async (request, reply) => {
      reply.header('cache-control', 'max-age=60').header('vary', 'accept-language')
      return `plain ${request.headers['accept-language'] ?? ''} ${count('plain')}`
    })
    app.get('/keyed', async (request, reply) => {
      reply.header('cache-control', 'public, s-maxage=60').header('vary', 'x-api-key')
      return `keyed for ${String(request.headers['x-api-key'])} ${count('keyed')}`
    })
  }, { store: fleet.store, credentialHeaders: ['x-api-key'] })
  servers.push(server)
  return { ...server, fleet }
}

/** Entry keys in Redis under `prefix` for `path`'s variants. */
async function variantKeys (prefix: string, path: string): Promise<string[]> {
  return await client.keys(`${prefix}e:http://www.example.test${path}\n\0vary *`)
}

/** Waits (up to 2 s) until Redis holds at least `n` variant keys for `path`: saves are asynchronous. */
async function saved (prefix: string, path: string, n: number): Promise<void> {
  for (let i = 0; i < 100 && (await variantKeys(prefix, path)).length < n; i++) await sleep(20)
  expect((await variantKeys(prefix, path)).length).toBeGreaterThanOrEqual(n)
}

describe('httpCache with a fleet store: responses with Vary', () => {
  it('a page with Vary (as Next.js sends) stored by one process is served by the other from Redis, variant by variant', async () => {
    const prefix = `vary-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    const first = await get(`${a.url}/page`, { headers: site })
    expect(first.headers.get('x-cache')).toBe('MISS')
    await saved(prefix, '/page', 1)
    // b has nothing in memory: the Vary record and then the variant come from Redis.
    const fromB = await get(`${b.url}/page`, { headers: site })
    expect(fromB.headers.get('x-cache')).toBe('HIT')
    expect(fromB.text).toBe(first.text)
    expect(b.runs.get('page') ?? 0).toBe(0)
    // Another variant, rendered by b: a has the Vary record in memory, the variant only in Redis.
    const rsc = { ...site, rsc: '1' }
    expect((await get(`${b.url}/page`, { headers: rsc })).text).toBe('page rsc=1 1')
    await saved(prefix, '/page', 2)
    const fromA = await get(`${a.url}/page`, { headers: rsc })
    expect(fromA.headers.get('x-cache')).toBe('HIT')
    expect(fromA.text).toBe('page rsc=1 1')
    expect(a.runs.get('page')).toBe(1)
  })

  it('a variant found by its Content-Language (the language alias) is loaded from Redis with the variant it names', async () => {
    const prefix = `vary-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    expect((await get(`${a.url}/lang`, { headers: { ...site, 'accept-language': 'de' } })).text).toBe('lang de 1')
    await saved(prefix, '/lang', 2)
    // Another Accept-Language whose one preferred language is de: the alias answers it.
    const fromB = await get(`${b.url}/lang`, { headers: { ...site, 'accept-language': 'fr;q=0.5, de' } })
    expect(fromB.headers.get('x-cache')).toBe('HIT')
    expect(fromB.text).toBe('lang de 1')
    expect(b.runs.get('lang') ?? 0).toBe(0)
    // A language nobody stored is rendered.
    expect((await get(`${b.url}/lang`, { headers: { ...site, 'accept-language': 'fr' } })).text).toBe('lang fr 1')
  })

  it('a request with credentials is served a variant from Redis only if it may be, claims nothing and stores nothing', async () => {
    const prefix = `vary-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    const en = { ...site, 'accept-language': 'en' }
    const signedIn = { ...en, cookie: 'session=1' }
    expect((await get(`${a.url}/plain`, { headers: en })).text).toBe('plain en 1')
    expect((await get(`${a.url}/lang`, { headers: en })).text).toBe('lang en 1')
    await saved(prefix, '/plain', 1)
    await saved(prefix, '/lang', 2)
    // max-age only: stored for anyone, never for a request with credentials.
    const plain = await get(`${b.url}/plain`, { headers: signedIn })
    expect(plain.headers.get('x-cache')).toBe('MISS')
    expect(plain.text).toBe('plain en 1')
    expect(b.runs.get('plain')).toBe(1)
    // s-maxage: shared with credentials too.
    const lang = await get(`${b.url}/lang`, { headers: signedIn })
    expect(lang.headers.get('x-cache')).toBe('HIT')
    expect(lang.text).toBe('lang en 1')
    // The variant of another language, with credentials: rendered for this request, not
    // claimed (another process would wait) and not stored.
    expect((await get(`${b.url}/plain`, { headers: { ...signedIn, 'accept-language': 'de' } })).text).toBe('plain de 2')
    await sleep(100)
    expect(await client.keys(`${prefix}l:*`)).toEqual([])
    expect(await variantKeys(prefix, '/plain')).toHaveLength(1)
    // b's own render with credentials did not replace a's entry.
    const anonymous = await get(`${b.url}/plain`, { headers: en })
    expect(anonymous.headers.get('x-cache')).toBe('HIT')
    expect(anonymous.text).toBe('plain en 1')
  })

  it('a Host not in canonical form reads the canonical variant from Redis and fills nothing', async () => {
    const prefix = `vary-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    const odd = { host: 'WWW.Example.Test' }
    expect((await get(`${a.url}/page`, { headers: site })).text).toBe('page rsc=none 1')
    await saved(prefix, '/page', 1)
    const read = await get(`${b.url}/page`, { headers: odd })
    expect(read.headers.get('x-cache')).toBe('HIT')
    expect(read.text).toBe('page rsc=none 1')
    expect((await get(`${b.url}/page`, { headers: { ...odd, rsc: '1' } })).text).toBe('page rsc=1 1')
    await sleep(100)
    expect(await variantKeys(prefix, '/page')).toHaveLength(1)
    expect(await client.keys(`${prefix}l:*`)).toEqual([])
  })

  it('a language alias in Redis that names another URL\'s variant is refused', async () => {
    const prefix = `vary-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    expect((await get(`${a.url}/lang`, { headers: { ...site, 'accept-language': 'de' } })).text).toBe('lang de 1')
    expect((await get(`${a.url}/keyed`, { headers: { ...site, 'x-api-key': 'k' } })).text).toBe('keyed for k 1')
    await saved(prefix, '/lang', 2)
    await saved(prefix, '/keyed', 1)
    const [victim] = await variantKeys(prefix, '/keyed')
    const [ofLang] = await variantKeys(prefix, '/lang')
    const aliasKey = ofLang!.replace(/\n[^\n]*$/, `\naccept-language=${encodeURIComponent('\0lang fr')}`)
    // An alias for fr under /lang's Vary record, as a hostile writer would put it.
    const header = Buffer.from(JSON.stringify({ m: { variant: victim!.slice(`${prefix}e:`.length) } }))
    const length = Buffer.alloc(4)
    length.writeUInt32LE(header.length)
    await client.set(aliasKey, Buffer.concat([length, header]), 'PX', 60_000)
    const got = await get(`${b.url}/lang`, { headers: { ...site, 'accept-language': 'fr' } })
    expect(got.text).toBe('lang fr 1')
    // It was read, and refused by the agent's checks (entry-meta.ts): never in b's memory.
    expect(b.fleet.agent.metrics()).toMatch(/spindle_cache_fleet_loads_total\{result="refused"\} 1\n/)
  })

  it('the value of a credential header (credentialHeaders) a response varies on is never a Redis key name', async () => {
    const prefix = `vary-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    const alice = { ...site, 'x-api-key': 'alice-secret-api-key' }
    expect((await get(`${a.url}/keyed`, { headers: alice })).text).toBe('keyed for alice-secret-api-key 1')
    await saved(prefix, '/keyed', 1)
    expect((await client.keys(`${prefix}*`)).filter((key) => key.includes('secret-api-key'))).toEqual([])
    // Still one variant per key, in either process.
    const fromB = await get(`${b.url}/keyed`, { headers: alice })
    expect(fromB.headers.get('x-cache')).toBe('HIT')
    expect(fromB.text).toBe('keyed for alice-secret-api-key 1')
    expect((await get(`${b.url}/keyed`, { headers: { ...site, 'x-api-key': 'bob-secret-api-key' } })).text).toBe('keyed for bob-secret-api-key 1')
  })
})
