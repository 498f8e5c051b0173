import { invalidOption as fail } from '../errors.ts'
import { fleetSchema } from '../option-schema.ts'
import { optionChecker, show } from '@spindle/options'

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

const SCHEMES: Record<string, boolean> = { 'redis:': false, 'valkey:': false, 'rediss:': true, 'valkeys:': true }

const checkFleetOptions = optionChecker(fleetSchema, fail)

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

/**
 * Checks the fleet options against the schema (option-schema.ts), parses the URL and checks
 * the options' relations, fills defaults, returns a frozen copy. Throws
 * SPINDLE_CACHE_INVALID_OPTION naming the option, after `optionPrefix` (`spindle start`
 * passes 'cache.').
 */
export function resolveFleetOptions (input: FleetOptions, optionPrefix = ''): ResolvedFleetOptions {
  checkFleetOptions(input, optionPrefix)
  const connection = Object.freeze(parseCacheUrl(input.url))
  const reconnectDelay = input.reconnectDelay ?? 100
  const maxReconnectDelay = input.maxReconnectDelay ?? 5000
  if (maxReconnectDelay < reconnectDelay) {
    fail(`${optionPrefix}maxReconnectDelay (${maxReconnectDelay}) must be at least ${optionPrefix}reconnectDelay (${reconnectDelay})`)
  }
  return Object.freeze({
    url: input.url,
    connection,
    prefix: input.prefix ?? 'spindle:',
    timeout: input.timeout ?? 100,
    maxTtl: input.maxTtl ?? 86_400_000,
    maxEntryBytes: input.maxEntryBytes ?? 4 * 1024 * 1024,
    compressAbove: input.compressAbove ?? 1024,
    claimMs: input.claimMs ?? 5000,
    waitMs: input.waitMs ?? 5000,
    failureThreshold: input.failureThreshold ?? 5,
    openMs: input.openMs ?? 2000,
    reconnectDelay,
    maxReconnectDelay,
  })
}
