import { SPINDLE_CACHE_INVALID_OPTION } from '../errors.ts'
import { show } from '../store-options.ts'

export interface FleetOptions {
  /** `redis://[user:password@]host[:port][/db]`; also `rediss://` (TLS), `valkey://`, `valkeys://`. */
  url: string
  /** Prefix of every key and channel in Redis, so several apps can share one server. Default 'spindle:'. */
  prefix?: string
  /** Longest a lookup waits for Redis before it is a miss, in ms. Default 100. */
  timeout?: number
  /** Longest an entry lives in Redis, in ms; entries with no expiry of their own get this. Default one day. */
  maxTtl?: number
  /** Largest entry kept in Redis after compression, in bytes; larger ones stay in memory only. Default 4 MiB. */
  maxEntryBytes?: number
  /** Values larger than this are gzipped before they go to Redis, in bytes. Default 1024. */
  compressAbove?: number
  /** Longest one process holds the fleet's claim on a missing key while it produces it, in ms. Default 5000. */
  claimMs?: number
  /** Longest a miss waits for the entry another process is producing, in ms. Default 5000. */
  waitMs?: number
  /** Consecutive failed Redis calls that open the circuit breaker. Default 5. */
  failureThreshold?: number
  /** How long the breaker stays open before a probe, in ms. Default 2000. */
  openMs?: number
  /** First reconnect delay, doubled each attempt up to maxReconnectDelay, with jitter, in ms. Default 100. */
  reconnectDelay?: number
  /** Longest reconnect delay, in ms. Default 5000. */
  maxReconnectDelay?: number
}

export interface ConnectionOptions {
  host: string
  port: number
  db: number
  username?: string
  password?: string
  tls: boolean
}

export interface ResolvedFleetOptions {
  readonly url: string
  readonly connection: Readonly<ConnectionOptions>
  readonly prefix: string
  readonly timeout: number
  readonly maxTtl: number
  readonly maxEntryBytes: number
  readonly compressAbove: number
  readonly claimMs: number
  readonly waitMs: number
  readonly failureThreshold: number
  readonly openMs: number
  readonly reconnectDelay: number
  readonly maxReconnectDelay: number
}

const KNOWN = new Set(['url', 'prefix', 'timeout', 'maxTtl', 'maxEntryBytes', 'compressAbove', 'claimMs', 'waitMs', 'failureThreshold', 'openMs', 'reconnectDelay', 'maxReconnectDelay'])
const SCHEMES: Record<string, boolean> = { 'redis:': false, 'valkey:': false, 'rediss:': true, 'valkeys:': true }

function fail (message: string): never {
  throw new SPINDLE_CACHE_INVALID_OPTION(message)
}

function int (name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) fail(`${name} must be an integer from ${min} to ${max}, got ${show(value)}`)
  return value
}

/** Parses a cache URL; `name` is where it came from (an option or SPINDLE_CACHE_URL), for the message. */
export function parseCacheUrl (url: unknown, name = 'url'): ConnectionOptions {
  if (typeof url !== 'string' || url.length === 0) fail(`${name} must be a redis://, rediss://, valkey:// or valkeys:// URL, got ${show(url)}`)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    fail(`${name} must be a redis://, rediss://, valkey:// or valkeys:// URL, got an unparsable string`)
  }
  const tls = SCHEMES[parsed.protocol]
  if (tls === undefined) fail(`${name} must be a redis://, rediss://, valkey:// or valkeys:// URL, got the scheme ${JSON.stringify(parsed.protocol)}`)
  if (parsed.hostname === '') fail(`${name} must name a host`)
  const dbText = parsed.pathname.replace(/^\//, '')
  if (dbText !== '' && !/^\d{1,5}$/.test(dbText)) fail(`${name} must end in a database number (/0), got ${JSON.stringify(parsed.pathname)}`)
  const port = parsed.port === '' ? 6379 : Number(parsed.port)
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port,
    db: dbText === '' ? 0 : Number(dbText),
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    tls,
  }
}

/** Checks the fleet options, fills defaults, returns a frozen copy. Throws SPINDLE_CACHE_INVALID_OPTION naming the option. */
export function resolveFleetOptions (input: FleetOptions): ResolvedFleetOptions {
  if (typeof input !== 'object' || input === null) fail(`fleet options must be an object, got ${show(input)}`)
  for (const key of Object.keys(input)) if (!KNOWN.has(key)) fail(`unknown fleet option ${JSON.stringify(key)}`)
  const connection = Object.freeze(parseCacheUrl(input.url))
  if (input.prefix !== undefined && (typeof input.prefix !== 'string' || input.prefix.length > 128)) fail(`prefix must be a string of at most 128 characters, got ${show(input.prefix)}`)
  const reconnectDelay = int('reconnectDelay', input.reconnectDelay, 100, 1, 60_000)
  return Object.freeze({
    url: input.url,
    connection,
    prefix: input.prefix ?? 'spindle:',
    timeout: int('timeout', input.timeout, 100, 1, 60_000),
    maxTtl: int('maxTtl', input.maxTtl, 86_400_000, 1000, 2 ** 31 * 1000),
    maxEntryBytes: int('maxEntryBytes', input.maxEntryBytes, 4 * 1024 * 1024, 1, 512 * 1024 * 1024),
    compressAbove: int('compressAbove', input.compressAbove, 1024, 0, 2 ** 31),
    claimMs: int('claimMs', input.claimMs, 5000, 1, 600_000),
    waitMs: int('waitMs', input.waitMs, 5000, 0, 600_000),
    failureThreshold: int('failureThreshold', input.failureThreshold, 5, 1, 1000),
    openMs: int('openMs', input.openMs, 2000, 1, 600_000),
    reconnectDelay,
    maxReconnectDelay: int('maxReconnectDelay', input.maxReconnectDelay, 5000, reconnectDelay, 600_000),
  })
}
