import { invalidOption as fail } from './errors.ts'
import { storeSchema } from './option-schema.ts'
import { optionChecker } from '@spindle/options'

export interface SharedStoreOptions {
  /** Size of the whole SharedArrayBuffer (data and bookkeeping), in bytes. Default 64 MiB. */
  maxBytes?: number
  /** Largest value stored, in bytes; larger values are refused. Default: maxBytes / 8, at most 8 MiB. */
  maxEntryBytes?: number
  /** Allocation unit, a power of two from 256 to 65536. Default 1024. */
  blockSize?: number
  /** Distinct tags and paths that can hold an invalidation time. Default 16384. */
  maxTags?: number
  /** Keys that can be in production (coalesced) at once. Default 1024. */
  maxPending?: number
  /** Time after which a lock holder is taken to have died and the store is emptied, in ms. Default 5000. */
  lockTimeout?: number
}

export interface ResolvedStoreOptions {
  readonly maxBytes: number
  readonly maxEntryBytes: number
  readonly blockSize: number
  readonly maxTags: number
  readonly maxPending: number
  readonly lockTimeout: number
}

const MIB = 1024 * 1024

const checkStoreOptions = optionChecker(storeSchema, fail)

/**
 * Checks the store options against the schema (option-schema.ts) and their relations, fills
 * defaults and returns a frozen copy. Throws SPINDLE_CACHE_INVALID_OPTION naming the option;
 * `prefix` is 'storeOptions.' under httpCache, whose own schema has checked them already.
 */
export function resolveStoreOptions (input: SharedStoreOptions = {}, prefix = ''): ResolvedStoreOptions {
  checkStoreOptions(input, prefix)
  const maxBytes = input.maxBytes ?? 64 * MIB
  const maxEntryBytes = input.maxEntryBytes ?? Math.min(Math.floor(maxBytes / 8), 8 * MIB)
  if (maxEntryBytes > maxBytes / 2) fail(`${prefix}maxEntryBytes must be at most half of maxBytes (${maxBytes / 2}), got ${maxEntryBytes}`)
  return Object.freeze({
    maxBytes,
    maxEntryBytes,
    blockSize: input.blockSize ?? 1024,
    maxTags: input.maxTags ?? 16384,
    maxPending: input.maxPending ?? 1024,
    lockTimeout: input.lockTimeout ?? 5000,
  })
}
