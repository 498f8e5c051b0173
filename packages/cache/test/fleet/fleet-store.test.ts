import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { createSharedStore, type Fleet, isPromise, startFleet, type StartFleetOptions } from '@spindle/cache'
import { describeCacheStore } from '../store-conformance.ts'
import { proxyTo, type RedisServer, startRedis } from './redis-server.ts'

let redis: RedisServer
const quiet = { info () {}, warn () {} }
const memory = () => createSharedStore({ maxBytes: 1024 * 1024, blockSize: 256, maxTags: 256, maxEntryBytes: 64 * 1024 })

beforeAll(async () => { redis = await startRedis() })
afterAll(async () => { await redis?.stop() })

/** A process's fleet tier: its own shared memory and its own Redis client, on a shared prefix. */
async function fleetOn (prefix: string, extra: Partial<StartFleetOptions> = {}): Promise<Fleet> {
  return await startFleet({ url: redis.url, prefix, memory: memory(), logger: quiet, openMs: 200, reconnectDelay: 20, maxReconnectDelay: 200, ...extra })
}

async function until (check: () => boolean | Promise<boolean>, ms = 3000): Promise<number> {
  const start = Date.now()
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error('condition not met in time')
    await sleep(5)
  }
  return Date.now() - start
}

describeCacheStore('fleet (shared memory in front of Redis)', async () => {
  const fleet = await fleetOn(`conf-${randomUUID()}:`)
  return { store: fleet.store, maxEntryBytes: fleet.store.maxEntryBytes, close: () => fleet.close() }
})

describe('fleet store across processes', () => {
  it('answers a memory hit synchronously and a memory miss from Redis, copying it into memory', async () => {
    const prefix = `x-${randomUUID()}:`
    const a = await fleetOn(prefix)
    const b = await fleetOn(prefix)
    try {
      expect(a.agent.up && b.agent.up).toBe(true)
      const big = Buffer.alloc(20_000, 'abc')
      a.store.set('page', big, { tags: ['t'], path: '/p', meta: { status: 200 } })
      expect(isPromise(a.store.get('page'))).toBe(false)
      await until(async () => (await b.store.get('page', { peek: true })) !== undefined)
      const entry = b.store.memory.get('page')!
      expect(entry.value.equals(big)).toBe(true)
      expect(entry.meta).toEqual({ status: 200 })
      expect(entry.tags).toEqual(['t'])
      // Now in b's memory: no promise.
      expect(isPromise(b.store.get('page'))).toBe(false)
      expect(b.agent.metrics()).toMatch(/spindle_cache_fleet_loads_total\{result="hit"\} 1/)
    } finally {
      await a.close(); await b.close()
    }
  })

  it('a tag revalidated in one process is seen by the other within a second, and entries in Redis written before it are gone', async () => {
    const prefix = `inv-${randomUUID()}:`
    const a = await fleetOn(prefix)
    const b = await fleetOn(prefix)
    try {
      a.store.set('k', Buffer.from('old'), { tags: ['demo'] })
      await until(async () => (await b.store.get('k', { peek: true })) !== undefined)
      a.store.invalidateTags(['demo'])
      const took = await until(() => b.store.memory.get('k', { peek: true }) === undefined)
      expect(took).toBeLessThan(1000)
      // Redis still holds the old bytes until someone reads them; a third process must not serve them.
      const c = await fleetOn(prefix)
      try {
        expect(await c.store.get('k')).toBeUndefined()
      } finally { await c.close() }
      // Paths too.
      a.store.set('p', Buffer.from('x'), { path: '/blog/one' })
      await until(async () => (await b.store.get('p', { peek: true })) !== undefined)
      b.store.invalidatePaths(['/blog'])
      await until(() => a.store.memory.get('p', { peek: true }) === undefined)
    } finally {
      await a.close(); await b.close()
    }
  })

  it('a process cut off from Redis while a tag was revalidated drops the stale entry when it reconnects', async () => {
    const prefix = `part-${randomUUID()}:`
    const proxy = await proxyTo(redis.port)
    const a = await fleetOn(prefix)
    const b = await fleetOn(prefix, { url: proxy.url })
    try {
      b.store.set('k', Buffer.from('v1'), { tags: ['demo'] })
      proxy.cut()
      await until(() => !b.agent.up)
      a.store.invalidateTags(['demo'])
      await sleep(100)
      // Cut off: b still serves what it has (memory keeps serving).
      expect(b.store.memory.get('k', { peek: true })).toBeDefined()
      proxy.restore()
      await until(() => b.agent.up, 5000)
      expect(b.store.memory.get('k', { peek: true })).toBeUndefined()
    } finally {
      await a.close(); await b.close(); await proxy.close()
    }
  })

  it('Redis down: misses answer within the timeout, memory keeps serving, the breaker opens once, and queued invalidations reach the fleet after a restart', async () => {
    const prefix = `down-${randomUUID()}:`
    const logs: string[] = []
    const logger = { info: (_: object, msg: string) => logs.push(msg), warn: (_: object, msg: string) => logs.push(msg) }
    const a = await fleetOn(prefix, { logger })
    const b = await fleetOn(prefix)
    try {
      a.store.set('kept', Buffer.from('v'), { tags: ['demo'] })
      b.store.set('other', Buffer.from('v'), { tags: ['demo'] })
      await redis.stop()
      await until(() => !a.agent.up && !b.agent.up)
      const started = Date.now()
      for (let i = 0; i < 20; i++) expect(await a.store.get(`missing-${i}`)).toBeUndefined()
      expect(Date.now() - started).toBeLessThan(20 * 150)
      expect(a.store.get('kept')).toBeDefined()
      expect(a.store.set('new', Buffer.from('n'))).toBe(true)
      a.store.invalidateTags(['demo'])
      expect(a.store.memory.get('kept')).toBeUndefined()
      expect(b.store.memory.get('other', { peek: true })).toBeDefined()
      await sleep(300)
      const downLogs = logs.filter((m) => /disconnected|breaker open/.test(m))
      expect(downLogs, logs.join('; ')).toHaveLength(2)
      await redis.start()
      await until(() => a.agent.up && b.agent.up, 8000)
      // The invalidation made while Redis was down reached b after the restart.
      await until(() => b.store.memory.get('other', { peek: true }) === undefined)
      expect(a.agent.metrics()).toMatch(/spindle_cache_fleet_invalidations_total\{direction="sent"\} 1/)
      expect(logs.filter((m) => m === 'fleet cache connected').length).toBe(2)
    } finally {
      await a.close(); await b.close()
    }
  })

  it('one process produces a missing key for the fleet: the other waits for its entry, or stops waiting when it gives up', async () => {
    const prefix = `claim-${randomUUID()}:`
    const a = await fleetOn(prefix)
    const b = await fleetOn(prefix)
    try {
      expect(await a.store.get('page')).toBeUndefined()
      // b misses too, while a produces: it waits instead of producing it again.
      const waiting = b.store.get('page')
      expect(isPromise(waiting)).toBe(true)
      await sleep(200)
      a.store.set('page', Buffer.from('rendered once'))
      expect((await waiting)!.value.toString()).toBe('rendered once')
      expect(b.agent.metrics()).toMatch(/spindle_cache_fleet_waits_total 1/)

      // a claims another key, then gives up through its lease: b stops waiting at once.
      expect(await a.store.get('dynamic')).toBeUndefined()
      const lease = a.store.tryLease('dynamic', 5000)!
      const started = Date.now()
      const other = b.store.get('dynamic')
      await sleep(100)
      lease.release()
      expect(await other).toBeUndefined()
      expect(Date.now() - started).toBeLessThan(1000)
    } finally {
      await a.close(); await b.close()
    }
  })

  it('keeps entries larger than maxEntryBytes (after compression) out of Redis', async () => {
    const prefix = `cap-${randomUUID()}:`
    const a = await fleetOn(prefix, { maxEntryBytes: 1000 })
    const b = await fleetOn(prefix, { maxEntryBytes: 1000 })
    try {
      const random = Buffer.from(Array.from({ length: 5000 }, () => Math.floor(Math.random() * 256)))
      a.store.set('random', random)
      // Repetitive bytes compress far below the cap and do travel.
      a.store.set('text', Buffer.alloc(50_000, 'a'))
      await until(async () => (await b.store.get('text', { peek: true })) !== undefined)
      expect(await b.store.get('random')).toBeUndefined()
      await until(() => /spindle_cache_fleet_oversize_total 1/.test(a.agent.metrics()))
    } finally {
      await a.close(); await b.close()
    }
  })
})
