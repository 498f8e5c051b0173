import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import { gzipSync } from 'node:zlib'
import { Redis } from 'ioredis'
import { cacheControlRoutes, createSharedStore, type Fleet, type SharedStore, startFleet, type StartFleetOptions } from '@spindle/cache'
import { get, sleep, start, type Started } from '../helpers.ts'
import { type RedisServer, startRedis } from './redis-server.ts'

// The fleet tier against what a hostile client or a hostile Redis can do: requests that
// store nothing must not hold other processes up, a purge or POST must not be undone by the
// copy in Redis, and nothing read from Redis may crash a process or poison a URL.
let redis: RedisServer
let client: Redis
const fleets: Fleet[] = []
const servers: Array<Started | Server> = []

beforeAll(async () => {
  redis = await startRedis()
  client = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true })
  await client.connect()
})
afterAll(async () => {
  for (const s of servers) {
    if ('app' in s) await s.app.close()
    else s.close()
  }
  for (const f of fleets) await f.close()
  client?.disconnect()
  await redis?.stop()
})

const quiet = { info () {}, warn () {} }
const site = { host: 'www.example.test' }
const TOKEN = 'a-purge-token-of-length'

interface Member extends Started { fleet: Fleet, memory: SharedStore }

async function member (prefix: string, options: Partial<StartFleetOptions> = {}): Promise<Member> {
  const memory = createSharedStore({ maxBytes: 4 * 1024 * 1024, maxTags: 256 })
  const fleet = await startFleet({ url: redis.url, prefix, memory, logger: quiet, ...options })
  fleets.push(fleet)
  const server = await start((app, count) => {
    app.get('/page', async (_request, reply) => {
      reply.header('cache-control', 's-maxage=60').header('cache-tag', 'pages')
      return `page render ${count('page')}`
    })
    app.get('/big', async (_request, reply) => {
      reply.header('cache-control', 's-maxage=60')
      return 'b'.repeat(64 * 1024) + count('big')
    })
    app.get('/item', async (_request, reply) => {
      reply.header('cache-control', 's-maxage=60')
      return `item render ${count('item')}`
    })
    app.post('/item', async () => 'updated')
    app.get('/mine', async (request, reply) => {
      reply.header('cache-control', 'public, s-maxage=60').header('vary', 'cookie')
      return `page for ${request.headers.cookie ?? 'nobody'} ${count('mine')}`
    })
    app.get('/y/:n', async (request, reply) => {
      reply.header('cache-control', 's-maxage=60')
      return `fresh ${(request.params as { n: string }).n} ${count((request.params as { n: string }).n)}`
    })
  }, { store: fleet.store })
  servers.push(server)
  return { ...server, fleet, memory }
}

const claimKeys = async (prefix: string): Promise<string[]> => await client.keys(`${prefix}l:*`)

/** Entry bytes as the codec lays them out: [u32 header length][header JSON][value]. */
function entryBytes (header: unknown, value: Buffer = Buffer.from('EVIL')): Buffer {
  const json = Buffer.from(JSON.stringify(header))
  const length = Buffer.alloc(4)
  length.writeUInt32LE(json.length)
  return Buffer.concat([length, json, value])
}

describe('the fleet tier against hostile requests and a hostile Redis', () => {
  it('requests that store nothing (HEAD, credentials, ranges, non-canonical targets, oversize entries) leave no claim that makes another process wait', async () => {
    const prefix = `hostile-${randomUUID()}:`
    const a = await member(prefix, { maxEntryBytes: 16 * 1024, compressAbove: 1024 * 1024 })
    const b = await member(prefix, { maxEntryBytes: 16 * 1024, compressAbove: 1024 * 1024 })
    const first: Array<[string, { method?: string, headers: Record<string, string> }]> = [
      ['/page', { method: 'HEAD', headers: site }],
      ['/page', { headers: { ...site, cookie: 'session=1' } }],
      ['/page', { headers: { ...site, authorization: 'Bearer x' } }],
      ['/page', { headers: { ...site, range: 'bytes=0-3' } }],
      ['/%70age', { headers: site }],
      ['/big', { headers: site }],
    ]
    for (const [path, init] of first) {
      await client.flushdb()
      expect((await get(`${a.url}${path}`, init)).status).toBeLessThan(300)
      await sleep(50)
      expect(await claimKeys(prefix), `${init.method ?? 'GET'} ${path} ${JSON.stringify(init.headers)}`).toEqual([])
      const started = Date.now()
      const other = await get(`${b.url}${path === '/big' ? '/big' : '/page'}`, { headers: site })
      expect(other.status).toBe(200)
      // Held by a claim, the other process would wait for claimMs (5 s).
      expect(Date.now() - started, `${init.method ?? 'GET'} ${path}`).toBeLessThan(1000)
      a.memory.invalidatePaths(['/'])
      b.memory.invalidatePaths(['/'])
    }
  })

  it('a response that varies on Cookie is kept per cookie under a digest: no Redis key holds the cookie', async () => {
    const prefix = `hostile-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    const alice = { ...site, cookie: 'session=alice-secret-token' }
    const bob = { ...site, cookie: 'session=bob-secret-token' }
    expect((await get(`${a.url}/mine`, { headers: alice })).text).toBe('page for session=alice-secret-token 1')
    expect((await get(`${a.url}/mine`, { headers: bob })).text).toBe('page for session=bob-secret-token 2')
    expect((await get(`${a.url}/mine`, { headers: alice })).headers.get('x-cache')).toBe('HIT')
    await sleep(100)
    const keys = await client.keys(`${prefix}*`)
    expect(keys.some((key) => key.includes('/mine'))).toBe(true)
    expect(keys.filter((key) => key.includes('secret-token'))).toEqual([])
    // Each cookie still gets its own page, in this process and the other (from Redis, under
    // the digest: the response says public).
    expect((await get(`${b.url}/mine`, { headers: bob })).text).toBe('page for session=bob-secret-token 2')
    expect((await get(`${a.url}/mine`, { headers: alice })).text).toBe('page for session=alice-secret-token 1')
  })

  it('a purge through the control routes made on the memory store reaches Redis and every process (keys, tags, paths)', async () => {
    const prefix = `hostile-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    // What the config does: routes made on the shared memory, before the runtime starts the fleet on it.
    const routes = cacheControlRoutes(a.memory, { token: TOKEN })
    const control = createServer((req, res) => routes[`${req.method} ${req.url}`]!(req, res))
    servers.push(control)
    control.listen(0, '127.0.0.1')
    await once(control, 'listening')
    const purgeUrl = `http://127.0.0.1:${(control.address() as { port: number }).port}/cache/purge`
    /** Both processes serve the page from memory; its text. */
    const hitOnBoth = async (): Promise<string> => {
      const text = (await get(`${a.url}/page`, { headers: site })).text
      for (const m of [a, b]) {
        let got = await get(`${m.url}/page`, { headers: site })
        for (let i = 0; i < 50 && got.headers.get('x-cache') !== 'HIT'; i++) got = await get(`${m.url}/page`, { headers: site })
        expect(got.headers.get('x-cache')).toBe('HIT')
        expect(got.text).toBe(text)
      }
      return text
    }
    for (const body of [{ keys: ['http://www.example.test/page'] }, { tags: ['pages'] }, { paths: ['/page'] }]) {
      const before = await hitOnBoth()
      const purged = await get(purgeUrl, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) })
      expect(purged.status).toBe(200)
      for (const m of [a, b]) {
        let got = await get(`${m.url}/page`, { headers: site })
        // The other process hears of it through Redis' channel: within a second.
        for (let i = 0; i < 50 && got.text === before; i++) got = await get(`${m.url}/page`, { headers: site })
        expect(got.text, `${JSON.stringify(body)} on ${m === a ? 'a' : 'b'}`).not.toBe(before)
      }
    }
  })

  it('a POST drops the stored response in Redis and in every process, not only in its own memory', async () => {
    const prefix = `hostile-${randomUUID()}:`
    const a = await member(prefix)
    const b = await member(prefix)
    expect((await get(`${a.url}/item`, { headers: site })).text).toBe('item render 1')
    let fromB = await get(`${b.url}/item`, { headers: site })
    for (let i = 0; i < 50 && fromB.headers.get('x-cache') !== 'HIT'; i++) fromB = await get(`${b.url}/item`, { headers: site })
    expect(fromB.headers.get('x-cache')).toBe('HIT')
    expect((await get(`${a.url}/item`, { method: 'POST', headers: site })).status).toBe(200)
    const again = await get(`${a.url}/item`, { headers: site })
    expect(again.headers.get('x-cache')).toBe('MISS')
    expect(again.text).toBe('item render 2')
    let onB = await get(`${b.url}/item`, { headers: site })
    for (let i = 0; i < 50 && onB.text === 'item render 1'; i++) onB = await get(`${b.url}/item`, { headers: site })
    expect(onB.text).not.toBe('item render 1')
  })

  it('an entry in Redis the cache cannot use is a miss: never a 5xx, a crash, a bomb or another URL\'s page', async () => {
    const prefix = `hostile-${randomUUID()}:`
    const a = await member(prefix)
    const meta = { s: 200, h: [['content-type', 'text/plain']], rt: Date.now(), ia: 0, fl: 60 }
    // The victim: a page whose key a hostile language alias will name.
    expect((await get(`${a.url}/y/victim`, { headers: site })).text).toBe('fresh victim 1')
    const cases: Record<string, Buffer> = {
      'no header fields': entryBytes({}),
      'meta null': entryBytes({ m: null }),
      'meta a number': entryBytes({ m: 5 }),
      'status 1000': entryBytes({ m: { ...meta, s: 1000 } }),
      'status a string': entryBytes({ m: { ...meta, s: 'abc' } }),
      'header name with a space': entryBytes({ m: { ...meta, h: [['a b', 'c']] } }),
      'header value with CRLF': entryBytes({ m: { ...meta, h: [['x-a', 'b\r\nset-cookie: s=1']] } }),
      'header line not a pair': entryBytes({ m: { ...meta, h: ['content-type'] } }),
      'vary fields a string': entryBytes({ m: { vary: { id: 'i', f: 'accept' } } }),
      'language alias to another URL': entryBytes({ m: { variant: 'http://www.example.test/y/victim' } }),
      'tags a number': entryBytes({ t: 5, m: meta }),
      'path a number': entryBytes({ p: 7, m: meta }),
      'path without a slash': entryBytes({ p: 'x', m: meta }),
      'versions a string': entryBytes({ v: 'x', m: meta }),
      'header length past the end': Buffer.from([255, 255, 0, 0, 123]),
      'not gzip': entryBytes({ z: 1, m: meta }),
      // 100 MB of zeros in about 100 KB: must not be inflated past what memory would take.
      'gzip bomb': entryBytes({ z: 1, m: meta }, gzipSync(Buffer.alloc(100 * 1024 * 1024), { level: 9 })),
    }
    for (const [name, bytes] of Object.entries(cases)) {
      const path = `/y/${name.replace(/\W/g, '')}`
      await client.set(`${prefix}e:http://www.example.test${path}`, bytes, 'PX', 60_000)
      const started = Date.now()
      const got = await get(`${a.url}${path}`, { headers: site })
      expect(got.status, name).toBe(200)
      expect(got.text, name).toBe(`fresh ${name.replace(/\W/g, '')} 1`)
      expect(Date.now() - started, name).toBeLessThan(1000)
      // The route's answer replaced the bad entry: served from memory now.
      const again = await get(`${a.url}${path}`, { headers: site })
      expect(again.headers.get('x-cache'), name).toBe('HIT')
      expect(again.text, name).toBe(`fresh ${name.replace(/\W/g, '')} 1`)
    }
    expect(a.fleet.agent.metrics()).toMatch(/spindle_cache_fleet_loads_total\{result="refused"\} 1[0-9]/)
    // Published messages that are not bumps are ignored; the process is alive and serving.
    for (const message of ['null', '5', '{"t":[5]}', '{"t":[[1,2]]}', '{"d":[5]}', '{"t":"x"}']) await client.publish(`${prefix}invalidate`, message)
    await sleep(100)
    expect((await get(`${a.url}/y/victim`, { headers: site })).text).toBe('fresh victim 1')
    expect(a.fleet.agent.up).toBe(true)
  })

  it('the circuit breaker opens when Redis stops answering, also when every miss is cacheable (failed pipelines count)', async () => {
    const prefix = `hostile-${randomUUID()}:`
    const a = await member(prefix, { timeout: 100, failureThreshold: 5 })
    const pauser = new Redis({ host: '127.0.0.1', port: redis.port })
    try {
      // Redis stops answering every client for 2.5 s.
      await pauser.call('client', 'pause', '2500', 'ALL')
      const latencies: number[] = []
      for (let i = 0; i < 30; i++) {
        const started = Date.now()
        expect((await get(`${a.url}/y/slow${i}`, { headers: site })).status).toBe(200)
        latencies.push(Date.now() - started)
      }
      expect(a.fleet.agent.breakerState).toBe('open')
      // Once open, a miss no longer waits for Redis.
      expect(Math.max(...latencies.slice(-10))).toBeLessThan(50)
    } finally {
      await pauser.call('client', 'unpause').catch(() => {})
      pauser.disconnect()
    }
  })
})
