import { createSharedStore, getSharedStore, type SharedStore } from '@spindle/cache'

// One store per thread, kept on globalThis so that a handler module loaded twice (Next
// imports handlers by path, and 'use cache' and the incremental cache load separately)
// still sees one store.
const STORE = Symbol.for('@spindle/next.cache-store')

type Holder = { [STORE]?: SharedStore }

/**
 * The store the handlers use: the one the main thread shared with this worker under the
 * runtime's `shared.spindleCache` (see @spindle/cache), else a store private to this
 * thread, made on first use (a single process, `next build`, or a worker started
 * without a shared store).
 */
export function nextCacheStore (): SharedStore {
  const holder = globalThis as Holder
  let store = holder[STORE]
  if (!store) {
    store = getSharedStore() ?? createSharedStore()
    holder[STORE] = store
  }
  return store
}

// Next's tags live beside the tags of other users of the store (the HTTP cache), so
// they carry a prefix: purging 'posts' through the HTTP cache does not touch Next.
const TAG_PREFIX = 'next:'

export function storeTags (tags: readonly string[]): string[] {
  return tags.map((tag) => TAG_PREFIX + tag)
}
