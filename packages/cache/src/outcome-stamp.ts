// What httpCache did with a request, left on its raw IncomingMessage for @spindle/runtime's
// request metrics (spindle_cache_responses_total). A registry symbol: the runtime reads it
// without importing this package, and the stamp is there whether or not the status header
// (`statusHeader`) is sent.

export const kCacheOutcome = Symbol.for('spindle.cacheOutcome')

/** The outcomes, as the status header names them. */
export type CacheOutcome = 'HIT' | 'MISS' | 'STALE' | 'REVALIDATED' | 'BYPASS'

export function stampOutcome (raw: object, outcome: CacheOutcome): void {
  (raw as { [kCacheOutcome]?: CacheOutcome })[kCacheOutcome] = outcome
}
