// The times a request carries on its raw IncomingMessage, set by whichever module sees the
// moment first and read by the others (admission, the render queue, the pool's gate and the
// request metrics). Registry symbols, so a second copy of the package agrees on them.

/** When the request arrived (performance.now()): set by the runtime's worker, or on first sight. */
export const kArrivedAt = Symbol.for('spindle.arrivedAt')
/**
 * When the request's route handler was let run (performance.now()): the request metrics read
 * it for the queue delay, so they need no preHandler hook of their own.
 */
export const kStartedAt = Symbol.for('spindle.startedAt')

/** A raw request with the stamps it may carry. */
export type Stamped = { [kArrivedAt]?: number, [kStartedAt]?: number }
