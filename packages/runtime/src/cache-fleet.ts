import { SPINDLE_RUNTIME_CACHE_UNAVAILABLE } from './errors.ts'
import type { ResolvedOptions } from './options.ts'

// The runtime stays usable without @spindle/cache: it is imported only when a cache URL is
// set (an optional peer dependency), through a specifier the compiler does not follow.
const CACHE_PACKAGE = '@spindle/cache'

interface CacheModule {
  parseCacheUrl (url: string, name: string): unknown
  resolveFleetOptions (options: Record<string, unknown>, optionPrefix: string): unknown
  openSharedStore (buffer: SharedArrayBuffer): unknown
  startFleet (options: Record<string, unknown>): Promise<RunningFleet>
}

export interface RunningFleet {
  readonly shared: Readonly<Record<string, unknown>>
  readonly agent: { metrics (): string }
  close (): Promise<void>
}

/**
 * Starts the process's fleet cache tier (one Redis/Valkey client, in this thread) for
 * `cache.url` or SPINDLE_CACHE_URL, in front of the store shared as `spindleCache` (made
 * here when the config did not share one). Undefined when no URL is set.
 */
export async function startCacheFleet (opts: ResolvedOptions): Promise<RunningFleet | undefined> {
  if (!opts.cache) return undefined
  const { url, source, options } = opts.cache
  let cache: CacheModule
  try {
    cache = await import(CACHE_PACKAGE) as CacheModule
  } catch (err) {
    throw new SPINDLE_RUNTIME_CACHE_UNAVAILABLE(source, (err as Error).message, { cause: err })
  }
  // Checked here so that the messages name where the URL came from and the other options as
  // the config file spells them (cache.timeout).
  cache.parseCacheUrl(url, source)
  cache.resolveFleetOptions({ ...options, url }, 'cache.')
  const buffer = opts.shared.spindleCache
  const memory = buffer instanceof SharedArrayBuffer ? cache.openSharedStore(buffer) : undefined
  return await cache.startFleet({ ...options, url, ...(memory ? { memory } : {}), logger: opts.logger })
}
