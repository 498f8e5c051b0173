// How fast a thread gets through its renders, as the admission controller (controller.ts)
// weighs it. Two readings:
// - the drain: the time between two ends while the thread works without a break (a moving
//   average). A predicted wait is the renders ahead times the drain.
// - the pace: the thread's busy time per render, over the last PACE_ENDS busy-time samples
//   and the ends between them. The overload rules weigh arrivals against it. The gap between
//   ends says less: a lone render that waits for I/O takes longer than its share of a full
//   load, and renders that run side by side end in pairs. A host that cannot see its thread
//   (the render pool, whose renders run on other threads) gives no busy time; its pace is
//   the drain measured while its slots were all busy or renders waited.

/**
 * Renders that end before the drain rate is measured, by default (`warmRenders`): the first
 * ones of a thread run cold (the JIT, the framework's caches), often ten times slower, and
 * would make every wait look long. Until then nothing is held back.
 */
export const WARM_RENDERS = 4
/** Renders that run this long (ms) are streams (SSE, slow downloads): their time says nothing of the drain rate. */
export const LONG_LIVED = 10_000
/** Weight of the newest sample in the moving averages. */
const NEW_WEIGHT = 0.2
/** Busy-time samples over which the pace is measured. */
const PACE_ENDS = 8

export class PaceMeter {
  readonly #warm: number
  /** undefined: the drain is measured on the wall clock the events carry. */
  readonly #workClock: (() => number) | undefined
  #drain = 0
  #pace = 0
  // The last PACE_ENDS busy-time samples (ms) and the count of ends at each, oldest at #paceAt.
  readonly #busyAt = new Float64Array(PACE_ENDS)
  readonly #endsAt = new Float64Array(PACE_ENDS)
  #paceAt = 0
  #samples = 0
  #ended = 0
  /** When the last render ended, or the thread last started to work after an idle spell, on the work clock. */
  #lastEnd = 0
  /** Whether renders were waiting or still running when the last one ended. */
  #lastEndFull = false

  /** `warm`: renders that end unmeasured (WARM_RENDERS). `workClock`: see AdmissionController. */
  constructor (warm: number, workClock?: () => number) {
    this.#warm = warm
    this.#workClock = workClock
  }

  /** Mean ms between completions at the concurrency seen; 0 until `warm` renders have ended. */
  get drain (): number { return this.#drain }
  /** Busy ms of the thread per render; 0 until measured. */
  get pace (): number { return this.#pace }

  /** The thread starts to work after an idle spell: the time to the next end is one render's. */
  startedWork (now: number): void {
    this.#lastEnd = this.#workClock?.() ?? now
  }

  /**
   * A render ended after `serviceMs`, with `queued` renders waiting and `running` still
   * running; `busyMs`: the thread's busy time so far, or NaN where the host did not read it.
   */
  ended (now: number, serviceMs: number, queued: number, running: number, busyMs: number): void {
    // The drain rate is the time between ends while the thread works without a break: the
    // pace the CPU sets, not the time a response took to reach a slow client.
    const work = this.#workClock?.() ?? now
    const gap = work - this.#lastEnd
    this.#lastEnd = work
    // Without a busy time: flat out when renders waited, or ran side by side, at this end and the one before.
    const full = queued > 0 || running >= 1
    const flatOut = this.#lastEndFull && full
    this.#lastEndFull = full
    if (!(serviceMs < LONG_LIVED) || ++this.#ended <= this.#warm) return
    this.#drain = this.#drain === 0 ? gap : this.#drain + NEW_WEIGHT * (gap - this.#drain)
    if (!Number.isNaN(busyMs)) {
      const i = this.#paceAt
      const busyBefore = this.#busyAt[i]!
      const endsBefore = this.#endsAt[i]!
      this.#busyAt[i] = busyMs
      this.#endsAt[i] = this.#ended
      this.#paceAt = (i + 1) % PACE_ENDS
      if (++this.#samples > PACE_ENDS) this.#pace = (busyMs - busyBefore) / (this.#ended - endsBefore)
    } else if (flatOut && this.#samples === 0) {
      this.#pace = this.#pace === 0 ? gap : this.#pace + NEW_WEIGHT * (gap - this.#pace)
    }
  }
}
