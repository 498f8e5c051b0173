import { describe, expect, it } from 'vitest'
import { assertCacheStore, createSharedStore, isCacheStore } from '@spindle/cache'
import { describeCacheStore } from './store-conformance.ts'

describeCacheStore('shared memory', async () => {
  const store = createSharedStore({ maxBytes: 1024 * 1024, blockSize: 256, maxTags: 64, maxEntryBytes: 64 * 1024 })
  return { store, maxEntryBytes: store.maxEntryBytes }
})

describe('assertCacheStore', () => {
  it('accepts the shared store and rejects objects that lack a method, naming them', () => {
    expect(isCacheStore(createSharedStore({ maxBytes: 1024 * 1024 }))).toBe(true)
    expect(() => assertCacheStore(createSharedStore({ maxBytes: 1024 * 1024 }))).not.toThrow()
    expect(() => assertCacheStore(null)).toThrow(/store must be a cache store object, got null/)
    const partial = { get () {}, set () {}, delete () {}, invalidateTags () {} }
    expect(isCacheStore(partial)).toBe(false)
    expect(() => assertCacheStore(partial, 'cache.store')).toThrow(/^cache\.store must be a cache store: invalidatePaths, tagsRevalidatedAt are not a function$/)
    expect(() => assertCacheStore(partial)).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_ARGUMENT' }))
  })
})
