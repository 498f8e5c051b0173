import type { FastifyRequest } from 'fastify'
import { BYPASS_HEADERS, DEFAULT_KEY_HEADERS, defaultKey, type KeyFunction } from './cache-key.ts'
import { invalidOption as fail } from './errors.ts'
import { DEFAULT_SHARED_NAME } from './shared-resource.ts'
import { FleetStore } from './fleet/fleet-store.ts'
import { SharedStore } from './shared-store.ts'
import { httpCacheSchema } from './option-schema.ts'
import { optionChecker } from '@spindle/options'
import { resolveStoreOptions, type SharedStoreOptions } from './store-options.ts'

export interface HttpCacheOptions {
  /**
   * The store to use: a SharedStore, or a FleetStore (`startFleet(...).store`) to share entries and
   * purges with other processes through Redis/Valkey. Default: the one shared by the runtime under
   * `sharedName` (the fleet store when the runtime runs a fleet tier), else a private store made from `storeOptions`.
   */
  store?: SharedStore | FleetStore
  /** Name of the runtime shared resource holding the store's buffer. Default 'spindleCache'. */
  sharedName?: string
  /** Options of the private store made when no store is given or shared. */
  storeOptions?: SharedStoreOptions
  /** Computes the cache key. Default: `scheme://host/path?query` plus the values of `keyHeaders` present. */
  key?: KeyFunction
  /** Request headers added to the default key when present. Default: the forwarded-URL headers (see the guide). */
  keyHeaders?: readonly string[]
  /** Response header listing tags to purge by (comma or space separated); false to ignore tags. Default 'cache-tag'. */
  tagHeader?: string | false
  /** Response header that says HIT, MISS, STALE, REVALIDATED or BYPASS; false for none. Default 'x-cache'. */
  statusHeader?: string | false
  /** Longest wait for another thread producing the same key, in ms; false to never wait. Default 10000. */
  coalesceTimeout?: number | false
  /**
   * Seconds a stale response may still be served when revalidating it fails (the route
   * throws or answers 500, 502, 503 or 504), unless it says must-revalidate,
   * proxy-revalidate, s-maxage or no-cache. The response's own stale-if-error can extend
   * it. 0 turns it off. Default 60.
   */
  staleOnError?: number
  /** Share of (Date - Last-Modified) used as heuristic freshness. Default 0.1. */
  heuristicFraction?: number
  /** Cap of heuristic freshness, in seconds. Default 86400. */
  heuristicMaxAge?: number
  /** Return false to leave a request alone (no lookup, no store). Default: every GET and HEAD is considered, and every POST for storing its response (docs/cache.md). */
  shouldCache?: (request: FastifyRequest) => boolean
  /**
   * Host names (without port) the app answers for; a request for any other Host gets 400
   * before any route runs. `*.example.com` allows every subdomain of example.com. Default:
   * any Host that is a valid `host[:port]`.
   */
  allowedHosts?: readonly string[]
  /**
   * Request headers that carry a user's credentials, besides `Cookie` and `Authorization`
   * (e.g. `x-api-key`). A request with any of them is answered by the route and its
   * response is not stored, unless the response says `public` or `s-maxage` or the route
   * sets `config: { cache: { public: true } }`. Default: none.
   */
  credentialHeaders?: readonly string[]
  /** Longest time, in seconds, a 4xx or 5xx response (which needs explicit freshness to be stored at all) is kept. Default 5. */
  maxErrorTtl?: number
  /**
   * The targeted Cache-Control field this cache obeys before Cache-Control (RFC 9213), lower-case;
   * false to ignore targeted fields. Default 'cdn-cache-control'.
   */
  targetedCacheControl?: string | false
}

export interface ResolvedHttpCacheOptions {
  readonly store: SharedStore | FleetStore | undefined
  readonly sharedName: string
  readonly storeOptions: SharedStoreOptions | undefined
  readonly key: KeyFunction
  readonly bypassHeaders: readonly string[]
  readonly tagHeader: string | false
  readonly statusHeader: string | false
  readonly coalesceTimeout: number | false
  readonly staleOnError: number
  readonly heuristicFraction: number
  readonly heuristicMaxAge: number
  readonly shouldCache: ((request: FastifyRequest) => boolean) | undefined
  readonly allowedHosts: ((host: string) => boolean) | undefined
  readonly credentialHeaders: readonly string[]
  readonly maxErrorTtl: number
  readonly targetedCacheControl: string | false
}

const checkHttpCacheOptions = optionChecker(httpCacheSchema, fail, { SharedStore, FleetStore })

/** Lower-cased header names after `always`, each once. */
function headerNames (value: readonly string[] | undefined, always: readonly string[]): readonly string[] {
  return Object.freeze([...new Set([...always, ...(value ?? []).map((h) => h.toLowerCase())])])
}

function headerName (value: string | false | undefined, fallback: string | false): string | false {
  return typeof value === 'string' ? value.toLowerCase() : value ?? fallback
}

/** A matcher for allowedHosts: exact names, or `*.name` for its subdomains. */
function hostMatcher (value: readonly string[] | undefined): ((host: string) => boolean) | undefined {
  if (value === undefined) return undefined
  const exact = new Set<string>()
  const suffixes: string[] = []
  for (const h of value) {
    const lower = h.toLowerCase()
    if (lower.startsWith('*.')) suffixes.push(lower.slice(1))
    else exact.add(lower)
  }
  return (host) => {
    const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!
    return exact.has(name) || suffixes.some((s) => name.endsWith(s) && name.length > s.length)
  }
}

/**
 * Checks the plugin options against the schema (option-schema.ts) and the store options'
 * relations, fills defaults and returns a frozen copy. Throws SPINDLE_CACHE_INVALID_OPTION.
 */
export function resolveHttpCacheOptions (input: HttpCacheOptions = {}): ResolvedHttpCacheOptions {
  checkHttpCacheOptions(input)
  if (input.storeOptions !== undefined) resolveStoreOptions(input.storeOptions, 'storeOptions.')
  const keyHeaders = input.keyHeaders === undefined ? DEFAULT_KEY_HEADERS : headerNames(input.keyHeaders, [])
  return Object.freeze({
    store: input.store,
    allowedHosts: hostMatcher(input.allowedHosts),
    credentialHeaders: headerNames(input.credentialHeaders, ['cookie', 'authorization']),
    maxErrorTtl: input.maxErrorTtl ?? 5,
    targetedCacheControl: headerName(input.targetedCacheControl, 'cdn-cache-control'),
    sharedName: input.sharedName ?? DEFAULT_SHARED_NAME,
    storeOptions: input.storeOptions,
    key: input.key ?? defaultKey(keyHeaders),
    bypassHeaders: BYPASS_HEADERS,
    tagHeader: headerName(input.tagHeader, 'cache-tag'),
    statusHeader: headerName(input.statusHeader, 'x-cache'),
    coalesceTimeout: input.coalesceTimeout ?? 10_000,
    staleOnError: input.staleOnError ?? 60,
    heuristicFraction: input.heuristicFraction ?? 0.1,
    heuristicMaxAge: input.heuristicMaxAge ?? 86_400,
    shouldCache: input.shouldCache,
  })
}
