// The demand window of the admission controller (controller.ts): the renders that arrived
// over the last `budget` ms, in SLOTS slots, with the refused ones and the immediate retries
// among them. From it come:
// - the climb rule: the renders that arrived over the window ask for more than OVERLOAD
//   times its length, and the queue kept overflowing the budget (STEADY of the last slots):
//   an overload too mild for the step rule (step-rule.ts), not one clump, which overflows
//   once and drains;
// - whether an overload goes on, and whether a recovery is over (the arrivals of the last
//   slots, or of the whole window, against the thread's pace);
// - a retry storm: most arrivals are immediate retries (STORM_SHARE, STORM_MIN), and its end
//   (CALM_SHARE).
// A reading is kept in fields, so judging an arrival allocates nothing.

/** Slots of the demand window, which spans the budget. */
const SLOTS = 8
/**
 * Overloaded: the renders that arrived over the last `budget` ms ask for more than this many
 * times that long (arrivals x the drain time). Above 1, because a rate-limited client sends
 * each second's requests at once: a window can hold two of its clumps, so a load at half of
 * capacity can look like up to one; a sustained overload passes it within a fraction of the
 * window (at 3x from calm, in about 400 ms).
 */
const OVERLOAD = 1.25
/** Slots (of the last STEADY + 1) in which the queue must have overflowed the budget. */
const STEADY = 3
/** Arrivals needed in the window before it is judged at all. */
const MIN_ARRIVALS = 8
/**
 * A retry storm: in the flow window, at least this share of the arrivals are immediate
 * retries (clients retrying at once make nearly all of them; independent clients at 3x
 * capacity almost none, since their next request on a connection comes later)...
 */
const STORM_SHARE = 0.5
/** ...and at least this many: a handful says nothing. */
const STORM_MIN = 50
/**
 * A storm ends once the clients stop coming straight back: rejections go on but fewer than
 * this share of arrivals are retries (or nothing is rejected and the queue is empty).
 */
const CALM_SHARE = 0.1

export class DemandWindow {
  /** ms a slot spans. */
  readonly slotMs: number
  readonly #budget: number
  // Per slot, each tagged with its number: arrivals (first requests on a connection left
  // out), all arrivals, refusals and immediate retries.
  readonly #arrivals = new Uint32Array(SLOTS)
  readonly #all = new Uint32Array(SLOTS)
  readonly #rejects = new Uint32Array(SLOTS)
  readonly #retries = new Uint32Array(SLOTS)
  readonly #ids = new Float64Array(SLOTS).fill(-1)
  // The last reading (read()).
  #climb = false
  #lately = 0
  #latelyMs = 0
  #allRead = 0
  #allMs = 0
  #arrivalsRead = 0
  #rejectsRead = 0
  #retriesRead = 0

  /** `budget`: ms the window spans (maxBacklog). */
  constructor (budget: number) {
    this.#budget = budget
    this.slotMs = budget / SLOTS
  }

  /** A render arrived. `fresh`: the first request on its connection; `retry`: right after its connection's 503. */
  arrived (now: number, fresh: boolean, retry: boolean): void {
    const i = this.#slot(now)
    if (!fresh) this.#arrivals[i]!++
    this.#all[i]!++
    if (retry) this.#retries[i]!++
  }

  /** The render that arrived now was refused. */
  refused (now: number): void {
    this.#rejects[this.#slot(now)]!++
  }

  /** A render was refused by the host for a reason of its own; it counts as an arrival refused. */
  rejected (now: number, retry: boolean): void {
    const i = this.#slot(now)
    this.#arrivals[i]!++
    this.#all[i]!++
    this.#rejects[i]!++
    if (retry) this.#retries[i]!++
  }

  /** Reads the window at `now`, with the thread draining a render every `drain` ms (0: not measured). */
  read (now: number, drain: number): void {
    const id = Math.floor(now / this.slotMs)
    let arrivals = 0
    let rejects = 0
    let retries = 0
    let lately = 0
    let all = 0
    for (let k = 0; k < SLOTS; k++) {
      const i = (id - k) % SLOTS
      if (this.#ids[i] !== id - k) continue
      arrivals += this.#arrivals[i]!
      rejects += this.#rejects[i]!
      retries += this.#retries[i]!
      all += this.#all[i]!
      if (k < 2) lately += this.#all[i]!
    }
    this.#arrivalsRead = arrivals
    this.#rejectsRead = rejects
    this.#retriesRead = retries
    this.#lately = lately
    this.#latelyMs = now - (id - 1) * this.slotMs
    this.#allRead = all
    this.#allMs = now - (id - SLOTS + 1) * this.slotMs
    this.#climb = drain > 0 && arrivals >= MIN_ARRIVALS && arrivals * drain > OVERLOAD * this.#budget && this.#steady(id)
  }

  /** The climb rule held at the last reading. */
  get climb (): boolean { return this.#climb }
  /** All arrivals over this slot and the one before, at the last reading, and the ms they span. */
  get lately (): number { return this.#lately }
  get latelyMs (): number { return this.#latelyMs }
  /** All arrivals over the window, at the last reading, and the ms they span. */
  get all (): number { return this.#allRead }
  get allMs (): number { return this.#allMs }

  /** Whether a retry storm goes on after the last reading, given whether one did (`storm`) and the renders waiting. */
  storm (storm: boolean, queued: number): boolean {
    const arrivals = this.#arrivalsRead
    const retries = this.#retriesRead
    if (retries >= STORM_MIN && retries >= STORM_SHARE * arrivals) return true
    if ((this.#rejectsRead > 0 && retries < CALM_SHARE * arrivals) || (this.#rejectsRead === 0 && queued === 0)) return false
    return storm
  }

  /**
   * Whether the queue keeps overflowing: in at least STEADY of the last STEADY + 1 slots, a
   * render was shed because it would have waited past the budget. Until then every render
   * that can start within the budget is queued, so a load the thread can serve in time is
   * never shed, however it clumps; a clump beyond the budget overflows once and drains.
   */
  #steady (id: number): boolean {
    let full = 0
    for (let k = 0; k <= STEADY; k++) {
      const i = (id - k) % SLOTS
      if (this.#ids[i] === id - k && this.#rejects[i]! > 0) full++
    }
    return full >= STEADY
  }

  /** The slot for `now`, cleared when it starts a new span. */
  #slot (now: number): number {
    const id = Math.floor(now / this.slotMs)
    const i = id % SLOTS
    if (this.#ids[i] !== id) { this.#ids[i] = id; this.#arrivals[i] = 0; this.#all[i] = 0; this.#rejects[i] = 0; this.#retries[i] = 0 }
    return i
  }
}
