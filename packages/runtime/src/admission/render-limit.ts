// How many renders a worker runs at once: as few as keep its event loop busy. Renders that
// only compute (a React tree) gain nothing from running side by side: each takes as many
// times longer as run beside it, and their objects outlive the young generation. Renders
// that wait (a loader's database query, an API call, a timer) need many side by side, or
// the thread idles while requests queue. So the limit follows the loop's idle time, as
// Envoy's adaptive concurrency filter and Netflix's limiters follow latency: it grows by one
// whenever the loop idled through a good share of a poll interval while renders waited, and
// shrinks by one whenever the loop was busy throughout one, down to the floor the caller
// gives (two renders; one while shedding). A limit not judged for FORGET_MS (no render
// waited that long) falls back to the floor, so the limit a load of waiting renders reached
// does not start a later burst of computing ones all at once.
//
// The idle share it judges is a moving average over the last few poll intervals, not the
// last one alone (IDLE_WEIGHT). A render's burst of computing often fills a whole interval
// of 2 ms and the next one idles: judged one interval at a time, such a loop shrank the
// limit about as often as it grew it, and it settled with the loop idle a fifth to a third
// of the time while renders waited.
//
// Measured on a React Router page whose loader waits 20 ms on a timer (closed loop of 100
// connections): with the earlier rule, one more render per idle poll interval and back to
// two at every end, one Fastify thread served 262 req/s with its loop idle a third of the
// time, against 553 for the same app without turns; one worker of spindle start 229
// against 456 with this limit (docs/overload.md#renders-that-wait).

/** Share of a poll interval the loop must have idled, with renders waiting, for the limit to grow. */
export const GROW_IDLE = 0.1
/** Share of a poll interval under which the loop counts as busy throughout: the limit shrinks. */
export const SHRINK_IDLE = 0.02
/** ms after the last judgement at which the limit falls back to the floor. */
export const FORGET_MS = 1000
/**
 * Weight of the newest poll interval in the idle share the limit is judged on: an average
 * over the last four intervals or so (8 ms in a worker, 40 ms in a render pool). It smooths
 * the intervals one render's burst fills, and a load that turns from waiting to computing
 * brings the average under SHRINK_IDLE within about six intervals. On the React Router
 * page whose loader waits 20 ms (one worker, 100 connections), the loop idled 19-22 % of
 * the time with about 80 renders waiting when each interval was judged alone, 12-15 % with
 * a weight of 0.5 and 6-10 % with this one.
 */
export const IDLE_WEIGHT = 0.25

export class RenderLimit {
  #limit = 0
  #judgedAt = -Infinity
  /** The idle share's moving average (IDLE_WEIGHT); NaN before the first interval of a load. */
  #idle = NaN

  /** The renders that may run at once at `now`, never fewer than `floor`. */
  value (floor: number, now: number): number {
    if (now - this.#judgedAt > FORGET_MS) { this.#limit = floor; this.#idle = NaN }
    return this.#limit > floor ? this.#limit : floor
  }

  /**
   * A poll interval that ended at `now`, with renders waiting, in which the loop idled
   * `idleShare` of the time (0 to 1; NaN for an interval of no length) while `running`
   * renders ran.
   */
  judge (idleShare: number, running: number, floor: number, now: number): void {
    const limit = this.value(floor, now)
    this.#judgedAt = now
    this.#limit = limit
    if (Number.isNaN(idleShare)) return
    const idle = this.#idle = Number.isNaN(this.#idle) ? idleShare : this.#idle + IDLE_WEIGHT * (idleShare - this.#idle)
    if (idle >= GROW_IDLE) this.#limit = Math.max(limit, running) + 1
    else if (idle < SHRINK_IDLE) this.#limit = Math.max(floor, limit - 1)
  }
}
