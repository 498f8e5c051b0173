import { fileURLToPath } from 'node:url'
import { SPINDLE_NEXT_CACHE_CONFLICT, SPINDLE_NEXT_CACHE_INVALID_CONFIG } from './errors.ts'
import { type NextStore, useNextCacheStore } from './store.ts'

// Absolute paths: Next imports handlers by path at run time, from its own directory.
const CACHE_HANDLER = fileURLToPath(new URL('./cache-handler.js', import.meta.url))
const USE_CACHE_HANDLER = fileURLToPath(new URL('./use-cache-handler.js', import.meta.url))

/** The part of a Next.js config withSpindle reads and writes. */
export interface SpindleNextConfig {
  cacheHandler?: string
  cacheHandlers?: Record<string, string | undefined>
  cacheMaxMemorySize?: number
  [key: string]: unknown
}

/** What withSpindle sets. */
export interface SpindleCacheSettings {
  cacheHandler: string
  cacheHandlers: Record<string, string | undefined> & { default: string, remote: string }
  cacheMaxMemorySize: 0
}

export interface WithSpindleOptions {
  /**
   * The store the cache handlers of this thread use instead of the one the runtime shares:
   * a SharedStore, or a FleetStore (`(await startFleet({ url })).store`) to put Redis/Valkey
   * behind shared memory in a single process. Default: the runtime's, else one per thread.
   */
  store?: NextStore
}

type ConfigFunction<T> = (...args: any[]) => T | Promise<T>

function show (value: unknown): string {
  if (value === null) return 'null'
  return Array.isArray(value) ? 'an array' : typeof value
}

function apply<T extends SpindleNextConfig> (config: T): T & SpindleCacheSettings {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new SPINDLE_NEXT_CACHE_INVALID_CONFIG(`the Next.js config must be an object or a function returning one, got ${show(config)}`)
  }
  if (config.cacheHandler !== undefined && config.cacheHandler !== CACHE_HANDLER) {
    throw new SPINDLE_NEXT_CACHE_CONFLICT(`cacheHandler is already set to ${JSON.stringify(config.cacheHandler)}; remove it to use the shared store`)
  }
  const handlers = config.cacheHandlers
  if (handlers !== undefined && (typeof handlers !== 'object' || handlers === null || Array.isArray(handlers))) {
    throw new SPINDLE_NEXT_CACHE_INVALID_CONFIG(`cacheHandlers must be an object, got ${show(handlers)}`)
  }
  for (const kind of ['default', 'remote']) {
    const path = handlers?.[kind]
    if (path !== undefined && path !== USE_CACHE_HANDLER) {
      throw new SPINDLE_NEXT_CACHE_CONFLICT(`cacheHandlers.${kind} is already set to ${JSON.stringify(path)}; remove it to use the shared store`)
    }
  }
  if (config.cacheMaxMemorySize !== undefined && config.cacheMaxMemorySize !== 0) {
    throw new SPINDLE_NEXT_CACHE_CONFLICT(`cacheMaxMemorySize must be 0 or unset (a per-thread copy would serve what another thread revalidated), got ${JSON.stringify(config.cacheMaxMemorySize)}`)
  }
  return Object.freeze({
    ...config,
    cacheHandler: CACHE_HANDLER,
    cacheHandlers: Object.freeze({ ...handlers, default: USE_CACHE_HANDLER, remote: USE_CACHE_HANDLER }),
    cacheMaxMemorySize: 0,
  })
}

/**
 * Wires a Next.js config to Spindle's shared cache: `cacheHandler` (ISR, route and fetch
 * cache) and `cacheHandlers.default` / `.remote` ('use cache') use the process's shared
 * store, and Next keeps no per-thread copy (`cacheMaxMemorySize: 0`). Accepts a config
 * object or a config function (phase, context) and returns the same kind.
 */
export function withSpindle<T extends SpindleNextConfig> (config: T, options?: WithSpindleOptions): T & SpindleCacheSettings
export function withSpindle<T extends SpindleNextConfig> (config: ConfigFunction<T>, options?: WithSpindleOptions): ConfigFunction<T & SpindleCacheSettings>
export function withSpindle<T extends SpindleNextConfig> (config: T | ConfigFunction<T>, options: WithSpindleOptions = {}): (T & SpindleCacheSettings) | ConfigFunction<T & SpindleCacheSettings> {
  // next.config is evaluated in the thread that serves, so the handlers of this thread find the store.
  if (options.store !== undefined) useNextCacheStore(options.store)
  if (typeof config === 'function') {
    return async (...args: unknown[]) => apply(await config(...args))
  }
  return apply(config)
}
