import { SPINDLE_CACHE_INVALID_ARGUMENT } from './errors.ts'
import type { GetOptions, SetOptions, StoreEntry } from './shared-store.ts'

/** A value, or a promise of it when a slower tier has to be asked. */
export type MaybePromise<T> = T | Promise<T>

export interface InvalidateOptions {
  /** Entries stored before the invalidation are stale at once and gone after this many ms. Default 0: gone now. */
  expire?: number
}

/**
 * What the HTTP cache and the Next.js handlers need from a store. A store that answers
 * from memory answers synchronously (the shared-memory store always does); a store with a
 * slower tier behind it returns a promise only when it has to reach that tier, so a hit
 * in memory costs no microtask. Callers check with `isPromise` rather than always
 * awaiting.
 *
 * The contract every store meets (one conformance suite checks it against each):
 * - `get` returns a copy the caller owns, or undefined; an entry stored before one of its
 *   tags (or paths) was invalidated is stale, and gone once the invalidation's `expire`
 *   has passed.
 * - `set` replaces any entry under the key and returns false, storing nothing, when the
 *   value is too large.
 * - `invalidateTags` returns the invalidation time (ms since epoch); `tagsRevalidatedAt`
 *   returns the latest such time of any of the tags, 0 when none was invalidated.
 */
export interface CacheStore {
  get (key: string, options?: GetOptions): MaybePromise<StoreEntry | undefined>
  set (key: string, value: Uint8Array, options?: SetOptions): MaybePromise<boolean>
  delete (key: string): MaybePromise<boolean>
  invalidateTags (tags: readonly string[], options?: InvalidateOptions): MaybePromise<number>
  invalidatePaths (prefixes: readonly string[], options?: InvalidateOptions): MaybePromise<number>
  tagsRevalidatedAt (tags: readonly string[]): MaybePromise<number>
}

const METHODS = ['get', 'set', 'delete', 'invalidateTags', 'invalidatePaths', 'tagsRevalidatedAt'] as const

/** Whether `value` has every method of a `CacheStore`. */
export function isCacheStore (value: unknown): value is CacheStore {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as Record<string, unknown>
  return METHODS.every((name) => typeof candidate[name] === 'function')
}

/** Throws, naming what is missing, unless `value` is a `CacheStore`. `name` is the option it came from. */
export function assertCacheStore (value: unknown, name = 'store'): asserts value is CacheStore {
  if (typeof value !== 'object' || value === null) {
    throw new SPINDLE_CACHE_INVALID_ARGUMENT(`${name} must be a cache store object, got ${value === null ? 'null' : typeof value}`)
  }
  const candidate = value as Record<string, unknown>
  const missing = METHODS.filter((method) => typeof candidate[method] !== 'function')
  if (missing.length > 0) throw new SPINDLE_CACHE_INVALID_ARGUMENT(`${name} must be a cache store: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not a function`)
}

export function isPromise<T> (value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}
