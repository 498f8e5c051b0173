import { createSharedStore, FleetStore, getCacheStore, SharedStore } from '@spindle/cache'
import { SPINDLE_NEXT_CACHE_INVALID_CONFIG } from './errors.ts'

// One store per thread, kept on globalThis so that a handler module loaded twice (Next
// imports handlers by path, and 'use cache' and the incremental cache load separately)
// still sees one store.
const STORE = Symbol.for('@spindle/next.cache-store')

/** The shared-memory store, or the fleet store (shared memory in front of Redis/Valkey). */
export type NextStore = SharedStore | FleetStore

type Holder = { [STORE]?: NextStore }

/**
 * The store the handlers use: one given to `withSpindle({ ... }, { store })`, else the one
 * the main thread shared with this worker under the runtime's `shared.spindleCache` (the
 * fleet store when the runtime runs a fleet tier; see @spindle/cache), else a store
 * private to this thread, made on first use (a single process, `next build`, or a worker
 * started without a shared store).
 */
export function nextCacheStore (): NextStore {
  const holder = globalThis as Holder
  let store = holder[STORE]
  if (!store) {
    store = getCacheStore() ?? createSharedStore()
    holder[STORE] = store
  }
  return store
}

/** This process's shared memory: the store itself, or the one in front of the fleet's Redis. */
export function memoryOf (store: NextStore): SharedStore {
  return store instanceof FleetStore ? store.memory : store
}

/** Makes `store` the one this thread's handlers use (withSpindle's `store` option). */
export function useNextCacheStore (store: unknown): void {
  if (!(store instanceof SharedStore) && !(store instanceof FleetStore)) {
    throw new SPINDLE_NEXT_CACHE_INVALID_CONFIG('store must be a SharedStore (createSharedStore) or a FleetStore (startFleet(...).store)')
  }
  (globalThis as Holder)[STORE] = store
}

// Next's tags live beside the tags of other users of the store (the HTTP cache), so
// they carry a prefix: purging 'posts' through the HTTP cache does not touch Next.
const TAG_PREFIX = 'next:'

export function storeTags (tags: readonly string[]): string[] {
  return tags.map((tag) => TAG_PREFIX + tag)
}

// Next's implicit tag of a path: revalidatePath('/p') is the tag `_N_T_/p`, and
// revalidatePath('/p', 'layout') is `_N_T_/p/layout`.
const IMPLICIT = '_N_T_'

// A `.` or `..` segment, spelled out or percent-encoded.
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:\/|$)/i

/**
 * The URL path an implicit tag names for the HTTP cache, or undefined. Next does not
 * resolve dot segments: `_N_T_/blog/..` (revalidatePath('/blog/..')) names its entries of
 * that very spelling, which no page has. The HTTP cache compares paths in canonical form,
 * where `/blog/..` is `/`: passed on, such a tag would purge every page instead of none.
 */
function pathOfTag (tag: string): string | undefined {
  if (!tag.startsWith(IMPLICIT + '/')) return undefined
  const path = tag.slice(IMPLICIT.length).replace(/\/(?:layout|page)$/, '') || '/'
  return DOT_SEGMENT.test(path) ? undefined : path
}

// The HTTP cache's own tags (its path tags) start with a NUL, which no Cache-Tag header
// can carry: a tag of Next's spelled so names no page's Cache-Tag.
const HTTP_INTERNAL = '\0'

/**
 * Invalidates Next's entries for `tags`, and, through the same store, what the HTTP cache
 * (`httpCache`) holds for them: the tags themselves (a page's `Cache-Tag` header), and for
 * Next's implicit path tags the pages under that path. `expireMs`: 0 gone at once, else
 * stale at once and gone after that many ms; a negative or non-number one (a cache
 * profile's expire of -1) is read as 0 rather than failing the action that revalidates.
 */
export function invalidateNextTags (tags: readonly string[], expireMs: number): void {
  const store = nextCacheStore()
  const plain = tags.filter((t) => !t.startsWith(IMPLICIT) && !t.startsWith(HTTP_INTERNAL))
  const paths = tags.map(pathOfTag).filter((p) => p !== undefined)
  const expire = expireMs >= 0 ? expireMs : 0
  store.invalidateTags([...storeTags(tags), ...plain], { expire })
  if (paths.length > 0) store.invalidatePaths(paths, { expire })
}
