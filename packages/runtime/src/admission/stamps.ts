// What a request carries on its raw IncomingMessage: the times, set by whichever module sees
// the moment first and read by the others (admission, the render queue, the pool's gate and
// the request metrics), and what @spindle/cache's httpCache did with it. Registry symbols, so
// a second copy of a package agrees on them.

/** When the request arrived (performance.now()): set by the runtime's worker, or on first sight. */
export const kArrivedAt = Symbol.for('spindle.arrivedAt')
/**
 * When the request's route handler was let run (performance.now()): the request metrics read
 * it for the queue delay, so they need no preHandler hook of their own.
 */
export const kStartedAt = Symbol.for('spindle.startedAt')

/**
 * The outcome @spindle/cache's httpCache gave the request ('HIT', 'MISS', 'STALE',
 * 'REVALIDATED', 'BYPASS'): its kCacheOutcome, read without importing that optional peer.
 */
export const kCacheOutcome = Symbol.for('spindle.cacheOutcome')

/** A raw request with the stamps it may carry. */
export type Stamped = { [kArrivedAt]?: number, [kStartedAt]?: number, [kCacheOutcome]?: string }
