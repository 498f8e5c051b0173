import { describe, expect, it } from 'vitest'
import { Worker } from 'node:worker_threads'
import { once } from 'node:events'
import { createSharedStore, openSharedStore } from '@spindle/cache'
import { hash32, SEED_A } from '../src/hash.ts'

const small = () => createSharedStore({ maxBytes: 1024 * 1024, blockSize: 256, maxTags: 64, maxPending: 8 })

/** Two distinct keys with the same 32-bit hash (birthday search). */
function collidingKeys (): [string, string] {
  const seen = new Map<number, string>()
  for (let i = 0; ; i++) {
    const key = `k${i}`
    const h = hash32(key, SEED_A)
    const other = seen.get(h)
    if (other !== undefined) return [other, key]
    seen.set(h, key)
  }
}

describe('shared store', () => {
  it('stores bytes with metadata and returns copies that are not shared memory', async () => {
    const store = small()
    expect(store.set('/a', Buffer.from('hello'), { tags: ['t'], path: '/a', meta: { status: 200 } })).toBe(true)
    const entry = store.get('/a')!
    expect(entry.value.toString()).toBe('hello')
    expect(entry.meta).toEqual({ status: 200 })
    expect(entry.tags).toEqual(['t'])
    expect(entry.stale).toBe(false)
    expect(entry.value.buffer).not.toBeInstanceOf(SharedArrayBuffer)
    // The Node hazard: a Response over a view on shared memory turns into "104,101,...".
    expect(await new Response(entry.value).text()).toBe('hello')
    // Changing the returned copy changes nothing stored.
    entry.value[0] = 0
    expect(store.get('/a')!.value.toString()).toBe('hello')
  })

  it('compares keys in full: a hash collision never returns the other entry', () => {
    const [a, b] = collidingKeys()
    const store = small()
    store.set(a, Buffer.from('A'))
    expect(store.get(b)).toBeUndefined()
    store.set(b, Buffer.from('B'))
    expect(store.get(a)!.value.toString()).toBe('A')
    expect(store.get(b)!.value.toString()).toBe('B')
    expect(store.delete(a)).toBe(true)
    expect(store.get(a)).toBeUndefined()
    expect(store.get(b)!.value.toString()).toBe('B')
  })

  it('refuses values over maxEntryBytes and never exceeds its budget', () => {
    const maxBytes = 512 * 1024
    const store = createSharedStore({ maxBytes, maxEntryBytes: 20_000, maxTags: 16 })
    expect(store.set('big', Buffer.alloc(20_001))).toBe(false)
    expect(store.get('big')).toBeUndefined()
    expect(store.stats().rejected).toBe(1)
    for (let i = 0; i < 500; i++) {
      expect(store.set(`k${i}`, Buffer.alloc(5000 + (i % 13) * 1000, i))).toBe(true)
      const s = store.stats()
      expect(s.bytesAllocated).toBeLessThanOrEqual(s.bytesCapacity)
    }
    const s = store.stats()
    expect(s.byteLength).toBeLessThanOrEqual(maxBytes)
    expect(s.evictions).toBeGreaterThan(400)
    expect(s.entries + s.evictions).toBe(500)
  })

  it('keeps hot entries under pressure (SIEVE)', () => {
    const store = createSharedStore({ maxBytes: 512 * 1024, blockSize: 1024, maxTags: 16 })
    const hot = Array.from({ length: 20 }, (_, i) => `hot${i}`)
    for (const k of hot) store.set(k, Buffer.alloc(1000, 1))
    for (let i = 0; i < 5000; i++) {
      if (i % 10 === 0) for (const k of hot) store.get(k)
      store.set(`cold${i}`, Buffer.alloc(1000, 2))
    }
    expect(hot.filter((k) => store.get(k) !== undefined).length).toBe(hot.length)
    expect(store.get('cold0')).toBeUndefined()
  })

  it('invalidates by tag and by path prefix on segment boundaries, as timestamps', () => {
    const store = small()
    store.set('a', Buffer.from('a'), { tags: ['post:1', 'posts'], path: '/blog/one' })
    store.set('b', Buffer.from('b'), { tags: ['posts'], path: '/blogger' })
    store.set('c', Buffer.from('c'), { path: '/about' })
    store.invalidatePaths(['/blog'])
    expect(store.get('a')).toBeUndefined()
    expect(store.get('b')).toBeDefined()
    store.invalidateTags(['posts'])
    expect(store.get('b')).toBeUndefined()
    expect(store.get('c')).toBeDefined()
    // An entry stored after the invalidation is live, even within the same millisecond.
    store.set('a', Buffer.from('a2'), { tags: ['posts'], path: '/blog/one' })
    expect(store.get('a')!.value.toString()).toBe('a2')
    expect(store.tagsRevalidatedAt(['posts', 'nope'])).toBeGreaterThan(0)
    expect(store.tagsRevalidatedAt(['nope'])).toBe(0)
  })

  it('serves tag-invalidated entries as stale until their expire window ends', async () => {
    const store = small()
    store.set('a', Buffer.from('a'), { tags: ['t'] })
    store.invalidateTags(['t'], { expire: 150 })
    expect(store.get('a')?.stale).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(store.get('a')).toBeUndefined()
  })

  it('honours staleAt and expireAt', async () => {
    const store = small()
    const now = Date.now()
    store.set('s', Buffer.from('s'), { staleAt: now - 1, expireAt: now + 100 })
    expect(store.get('s')?.stale).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(store.get('s')).toBeUndefined()
    expect(store.stats().staleHits).toBe(1)
  })

  it('a full tag table invalidates everything rather than forgetting a tag', () => {
    const store = createSharedStore({ maxBytes: 512 * 1024, maxTags: 16 })
    store.set('a', Buffer.from('a'), { tags: ['keep'] })
    store.invalidateTags(Array.from({ length: 40 }, (_, i) => `t${i}`))
    expect(store.get('a')).toBeUndefined()
  })

  it('opens from its buffer in another thread, and rejects foreign buffers', async () => {
    const store = small()
    store.set('from-main', Buffer.from('m'))
    const worker = new Worker(new URL('./fixtures/open-store.mjs', import.meta.url), { workerData: store.buffer })
    await once(worker, 'message')
    expect(store.get('from-worker')!.value.toString()).toBe('mw')
    expect(() => openSharedStore(new SharedArrayBuffer(4096))).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_BUFFER' }))
    expect(() => openSharedStore(new ArrayBuffer(4096) as unknown as SharedArrayBuffer)).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_BUFFER' }))
  })

  it('coalesces: one lease per key, waiters wake when it is released, bounded otherwise', async () => {
    const store = small()
    const lease = store.tryLease('k', 5000)!
    expect(lease).toBeDefined()
    expect(store.tryLease('k', 5000)).toBeUndefined()
    expect(store.tryLease('other', 5000)).toBeDefined()
    const started = Date.now()
    setTimeout(() => lease.release(), 100)
    expect(await store.waitFor('k', 5000)).toBe(true)
    expect(Date.now() - started).toBeLessThan(2000)
    expect(store.stats().coalescedWaits).toBe(1)
    const held = store.tryLease('k2', 5000)!
    expect(await store.waitFor('k2', 100)).toBe(false)
    held.release()
    // A lease whose holder vanished runs out on its own.
    store.tryLease('k3', 100)
    expect(await store.waitFor('k3', 2000)).toBe(true)
  })

  it('recovers when a thread dies holding the lock: the store is emptied, not deadlocked', () => {
    const store = createSharedStore({ maxBytes: 512 * 1024, maxTags: 16, lockTimeout: 100 })
    store.set('a', Buffer.from('a'))
    // Simulate a holder that never comes back.
    Atomics.store(new Int32Array(store.buffer, 0, 1), 0, 12345)
    const started = Date.now()
    expect(store.get('a')).toBeUndefined()
    expect(Date.now() - started).toBeGreaterThanOrEqual(90)
    expect(store.stats().resets).toBe(1)
    expect(store.set('a', Buffer.from('again'))).toBe(true)
    expect(store.get('a')!.value.toString()).toBe('again')
  })

  it('validates arguments', () => {
    const store = small()
    expect(() => store.set('', Buffer.from('x'))).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_ARGUMENT' }))
    expect(() => store.set('k', 'text' as unknown as Uint8Array)).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_ARGUMENT' }))
    expect(() => store.invalidatePaths(['no-slash'])).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_ARGUMENT' }))
    expect(() => store.invalidateTags(['t'], { expire: -1 })).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_ARGUMENT' }))
  })
})
