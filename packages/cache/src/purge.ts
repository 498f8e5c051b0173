import { SPINDLE_CACHE_INVALID_PURGE } from './errors.ts'
import { partKey } from './ranges.ts'
import type { SharedStore } from './shared-store.ts'
import type { FleetStore } from './fleet/fleet-store.ts'

export interface PurgeRequest {
  /** Cache keys to delete (with the default key: absolute URLs such as 'https://example.com/a?b'). */
  keys?: readonly string[]
  /** Tags (from the tag header) whose entries are purged. */
  tags?: readonly string[]
  /** Path prefixes: '/blog' purges '/blog' and everything under '/blog/'. */
  paths?: readonly string[]
}

export interface PurgeResult {
  deleted: number
  tags: number
  paths: number
}

function strings (name: string, value: unknown, check?: (s: string) => boolean): readonly string[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.length === 0 || (check !== undefined && !check(v)))) {
    throw new SPINDLE_CACHE_INVALID_PURGE(`${name} must be an array of non-empty strings${check ? ' starting with /' : ''}`)
  }
  return value as string[]
}

/** Purges by key, tag and path prefix. Tags and paths are timestamps: every thread sees them at once. */
export function purge (store: SharedStore | FleetStore, request: PurgeRequest): PurgeResult {
  if (typeof request !== 'object' || request === null) throw new SPINDLE_CACHE_INVALID_PURGE('expected an object with keys, tags or paths')
  const keys = strings('keys', request.keys)
  const tags = strings('tags', request.tags)
  // The store's path tags start with a NUL; a tag spelled so would purge a path prefix.
  if (tags.some((t) => t.startsWith('\0'))) throw new SPINDLE_CACHE_INVALID_PURGE('a tag must not start with a NUL character: purge path prefixes with paths')
  const paths = strings('paths', request.paths, (p) => p.startsWith('/'))
  if (keys.length + tags.length + paths.length === 0) throw new SPINDLE_CACHE_INVALID_PURGE('name at least one key, tag or path')
  let deleted = 0
  for (const key of keys) {
    if (store.delete(key)) deleted++
    // The URL's stored partial response goes with it.
    store.delete(partKey(key))
  }
  if (tags.length > 0) store.invalidateTags(tags)
  if (paths.length > 0) store.invalidatePaths(paths)
  return { deleted, tags: tags.length, paths: paths.length }
}
