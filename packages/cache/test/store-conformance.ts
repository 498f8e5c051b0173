import { describe, expect, it } from 'vitest'
import { setTimeout as sleep } from 'node:timers/promises'
import type { CacheStore } from '@spindle/cache'

export interface StoreUnderTest {
  store: CacheStore
  /** The largest value the store accepts. */
  maxEntryBytes: number
  close?: () => Promise<void>
}

/**
 * The contract of `CacheStore`, run against every store (the shared-memory store, the
 * fleet store with Redis behind it). `make` returns a fresh, empty store.
 */
export function describeCacheStore (name: string, make: () => Promise<StoreUnderTest>): void {
  async function withStore (fn: (t: StoreUnderTest) => Promise<void>): Promise<void> {
    const t = await make()
    try { await fn(t) } finally { await t.close?.() }
  }

  describe(`cache store conformance: ${name}`, () => {
    it('returns what was set, as a copy, with its tags, path and metadata', () => withStore(async ({ store }) => {
      expect(await store.set('a', Buffer.from('hello'), { tags: ['t1'], path: '/a', meta: { status: 200 } })).toBe(true)
      const entry = (await store.get('a'))!
      expect(entry.value.toString()).toBe('hello')
      expect(entry.value.buffer).not.toBeInstanceOf(SharedArrayBuffer)
      expect(entry.tags).toEqual(['t1'])
      expect(entry.path).toBe('/a')
      expect(entry.meta).toEqual({ status: 200 })
      expect(entry.stale).toBe(false)
      expect(await store.get('missing')).toBeUndefined()
    }))

    it('replaces an entry, deletes it, and says whether it was there', () => withStore(async ({ store }) => {
      await store.set('k', Buffer.from('one'))
      await store.set('k', Buffer.from('two'))
      expect((await store.get('k'))!.value.toString()).toBe('two')
      expect(await store.delete('k')).toBe(true)
      expect(await store.get('k')).toBeUndefined()
      expect(await store.delete('k')).toBe(false)
    }))

    it('refuses a value over the size cap and drops the older value it would replace', () => withStore(async ({ store, maxEntryBytes }) => {
      await store.set('big', Buffer.from('small'))
      expect(await store.set('big', Buffer.alloc(maxEntryBytes + 1))).toBe(false)
      expect(await store.get('big')).toBeUndefined()
    }))

    it('ages entries: stale after staleAt, gone after expireAt', () => withStore(async ({ store }) => {
      const now = Date.now()
      await store.set('s', Buffer.from('x'), { staleAt: now - 1 })
      expect((await store.get('s'))!.stale).toBe(true)
      await store.set('e', Buffer.from('x'), { expireAt: now + 50 })
      expect(await store.get('e')).toBeDefined()
      await sleep(80)
      expect(await store.get('e')).toBeUndefined()
    }))

    it('invalidates by tag: gone at once without expire, stale until expire with it', () => withStore(async ({ store }) => {
      await store.set('a', Buffer.from('a'), { tags: ['red'] })
      await store.set('b', Buffer.from('b'), { tags: ['blue'] })
      await store.set('c', Buffer.from('c'), { tags: ['green'] })
      expect(await store.tagsRevalidatedAt(['red'])).toBe(0)
      const at = await store.invalidateTags(['red'])
      expect(at).toBeGreaterThan(0)
      expect(await store.tagsRevalidatedAt(['red', 'blue'])).toBe(at)
      expect(await store.get('a')).toBeUndefined()
      expect((await store.get('b'))!.stale).toBe(false)
      await store.invalidateTags(['green'], { expire: 60_000 })
      expect((await store.get('c'))!.stale).toBe(true)
      // Stored after the invalidation: fresh.
      await store.set('a', Buffer.from('a2'), { tags: ['red'] })
      expect((await store.get('a'))!.stale).toBe(false)
    }))

    it('invalidates by path prefix, segment by segment', () => withStore(async ({ store }) => {
      await store.set('1', Buffer.from('1'), { path: '/blog/x' })
      await store.set('2', Buffer.from('2'), { path: '/blogger' })
      await store.invalidatePaths(['/blog'])
      expect(await store.get('1')).toBeUndefined()
      expect(await store.get('2')).toBeDefined()
    }))
  })
}
