import { SPINDLE_CACHE_INVALID_OPTION } from './errors.ts'

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

const KNOWN = new Set(['maxBytes', 'maxEntryBytes', 'blockSize', 'maxTags', 'maxPending', 'lockTimeout'])
const MIB = 1024 * 1024

function fail (message: string): never {
  throw new SPINDLE_CACHE_INVALID_OPTION(message)
}

export function show (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value)
  return typeof value
}

function int (name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(`${name} must be an integer from ${min} to ${max}, got ${show(value)}`)
  }
  return value
}

/** Checks the store options, fills defaults and returns a frozen copy. Throws SPINDLE_CACHE_INVALID_OPTION. */
export function resolveStoreOptions (input: SharedStoreOptions = {}): ResolvedStoreOptions {
  if (typeof input !== 'object' || input === null) fail(`options must be an object, got ${show(input)}`)
  for (const key of Object.keys(input)) if (!KNOWN.has(key)) fail(`unknown store option ${JSON.stringify(key)}`)
  const maxBytes = int('maxBytes', input.maxBytes, 64 * MIB, 256 * 1024, 2 ** 42)
  const blockSize = int('blockSize', input.blockSize, 1024, 256, 65536)
  if ((blockSize & (blockSize - 1)) !== 0) fail(`blockSize must be a power of two, got ${blockSize}`)
  const maxEntryBytes = int('maxEntryBytes', input.maxEntryBytes, Math.min(Math.floor(maxBytes / 8), 8 * MIB), 1, maxBytes)
  if (maxEntryBytes > maxBytes / 2) fail(`maxEntryBytes must be at most half of maxBytes (${maxBytes / 2}), got ${maxEntryBytes}`)
  return Object.freeze({
    maxBytes,
    maxEntryBytes,
    blockSize,
    maxTags: int('maxTags', input.maxTags, 16384, 16, 1 << 24),
    maxPending: int('maxPending', input.maxPending, 1024, 1, 1 << 16),
    lockTimeout: int('lockTimeout', input.lockTimeout, 5000, 10, 600_000),
  })
}
