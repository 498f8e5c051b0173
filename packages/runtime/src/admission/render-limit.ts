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

export class RenderLimit {
  #limit = 0
  #judgedAt = -Infinity

  /** The renders that may run at once at `now`, never fewer than `floor`. */
  value (floor: number, now: number): number {
    if (now - this.#judgedAt > FORGET_MS) this.#limit = floor
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
    if (idleShare >= GROW_IDLE) this.#limit = Math.max(limit, running) + 1
    else if (idleShare < SHRINK_IDLE) this.#limit = Math.max(floor, limit - 1)
    else this.#limit = limit
  }
}
