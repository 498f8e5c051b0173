// Admission control for renders: which arriving render may wait for its turn and which is
// answered 503 at once. A pure state machine: it sees only the events its host reports
// (arrivals with the queue they find, starts, ends) and the time it is given, so every
// scenario can be played on a fake clock. The host (render-queue.ts in a worker, the pool
// dispatcher in pool mode) owns the queue and the sockets.
//
// States:
// - normal: nothing waits; every arrival starts at once.
// - queueing: renders wait. An arrival is let in while its predicted wait fits the `budget`:
//   a burst that drains within the budget is queued, never shed.
// - shedding: more work arrives than the thread can do: in each half of the last quarter of
//   the budget, the renders that arrived beyond those that ended brought more than a fifth
//   of the half's length in work (CoDel's idea of a standing queue, judged on
//   the flow rather than on the queue: a clump that arrives at once fills one half only, and
//   drains in the other). Waiting would only grow, so the queue is held to `target` ms: what
//   is served is served soon, the rest gets a fast 503.
// - recovering: arrivals fell back within capacity while a queue from the overload drains;
//   the bound stays `target` until the queue is empty, then normal.
// A retry storm (clients that ask again the moment a 503 arrives: far more rejections than
// admissions) is a special case of shedding: the clients' number, not their rate, bounds the
// work, so shedding them only buys more 503s. The bound goes back to `budget`, and the host
// holds the 503s of immediate retries (retryHold) so they cannot spin the thread.
//
// The wait of an arrival is predicted from the drain rate: service time of a render over the
// renders running with it (the time between completions at that concurrency), averaged.

export const ADMISSION_STATES = ['normal', 'queueing', 'shedding', 'recovering'] as const
export type AdmissionState = typeof ADMISSION_STATES[number]

/** What to do with an arriving render: let it in (start or wait), or shed it and why. */
export type AdmissionVerdict = 'admit' | 'backlog' | 'overload'

export interface AdmissionParams {
  /**
   * ms: an arrival whose predicted wait passes this is shed ('backlog'); a quarter of it is
   * the span over which arrivals are weighed against ends. Default 1000 (maxBacklog).
   */
  budget: number
  /** ms: the predicted wait an arrival may have while shedding ('overload'); 0 keeps `budget`. Default 10 (overloadBacklog). */
  target: number
}

/**
 * Renders that end before the drain rate is measured: the first ones of a thread run cold
 * (the JIT, the framework's caches), often ten times slower, and would make every wait look
 * long. Until then nothing is held back.
 */
const WARM_RENDERS = 4
/** Weight of the newest sample in the moving average of ms per completion. */
const NEW_WEIGHT = 0.2
/** Slots of the flow window, a quarter of the budget long: two halves of HALF slots. */
const HALF = 4
const SLOTS = 2 * HALF
/**
 * Overloaded: in both halves, the renders that arrived beyond those that ended add more work
 * (x the drain time) than this share of the half's length: the queue grows by more than a
 * fifth of the time passing, not by the odd render a steady load leaves at a slot's edge.
 */
const MARGIN = 0.2
const MIN_ARRIVALS = 4
/**
 * A retry storm: in the flow window, at least this many rejections per render that ended
 * (open arrivals at 3x capacity make 2, clients retrying at once dozens).
 */
const STORM_RATIO = 10
/** ...and at least this many rejections: a handful says nothing. */
const STORM_MIN = 50
/** Renders that run this long (ms) are streams (SSE, slow downloads): their time says nothing of the drain rate. */
export const LONG_LIVED = 10_000

export class AdmissionController {
  readonly #budget: number
  readonly #target: number
  readonly #clock: () => number
  readonly #slotMs: number
  #state: AdmissionState = 'normal'
  #storm = false
  #running = 0
  /** Mean ms between completions at the concurrency seen; 0 until WARM_RENDERS have ended. */
  #drain = 0
  #ended = 0
  // Arrivals, rejections and ends per slot of the window, each slot tagged with its number.
  readonly #arrivals = new Uint32Array(SLOTS)
  readonly #rejects = new Uint32Array(SLOTS)
  readonly #ends = new Uint32Array(SLOTS)
  readonly #ids = new Float64Array(SLOTS).fill(-1)

  constructor (params: AdmissionParams, clock: () => number = () => performance.now()) {
    if (!(params.budget > 0)) throw new RangeError('budget must be above 0')
    if (!(params.target >= 0) || params.target >= params.budget) throw new RangeError('target must be from 0 to below budget')
    this.#budget = params.budget
    this.#target = params.target > 0 ? params.target : params.budget
    this.#clock = clock
    this.#slotMs = params.budget / 4 / SLOTS
  }

  /** The state as of the last event. */
  get state (): AdmissionState { return this.#state }
  /** Whether clients retry into the 503s (see the file's head): immediate retries should be held. */
  get storm (): boolean { return this.#storm }
  /** Mean ms between completions (0 before the first). */
  get drain (): number { return this.#drain }
  /** Renders started and not finished. */
  get running (): number { return this.#running }

  /**
   * A render arrives and finds `queued` renders waiting, `busy` running and room for
   * `capacity` at once. 'admit': start it (or queue it when no slot is free). `fresh`: the
   * first request on its connection. A client that moves its connections here (another
   * worker drains, or hands connections off to even the load) brings first requests with
   * no render of its own ending here before them; they are left out of the flow, so a load
   * that moves is not taken for a load that grows.
   */
  arrive (now: number, queued: number, busy: number, capacity: number, fresh = false): AdmissionVerdict {
    const slot = this.#slot(now)
    if (!fresh) this.#arrivals[slot]!++
    this.#judge(now, queued)
    if (queued === 0 && busy < capacity) return 'admit'
    // One render may always wait: the thread never idles between two renders for want of one.
    if (queued === 0 || this.#drain === 0) return 'admit'
    const wait = (queued + 1) * this.#drain
    const tight = (this.#state === 'shedding' || this.#state === 'recovering') && !this.#storm
    if (wait <= (tight ? this.#target : this.#budget)) return 'admit'
    this.#rejects[slot]!++
    return tight ? 'overload' : 'backlog'
  }

  /**
   * How many of `queued` waiting renders to cut, newest first: while shedding (not in a
   * storm), those beyond `target`. They joined under the burst bound before the overload
   * showed. Ask after every arrival, admitted or not.
   */
  excess (queued: number): number {
    if (this.#state !== 'shedding' || this.#storm || this.#drain === 0) return 0
    return Math.max(0, queued - Math.max(1, Math.floor(this.#target / this.#drain)))
  }

  /**
   * A render was shed by the host for a reason of its own (pressure, a wait past
   * maxQueueTime, a cut from the queue): it counts toward a retry storm.
   */
  rejected (now: number): void {
    const slot = this.#slot(now)
    this.#arrivals[slot]!++
    this.#rejects[slot]!++
  }

  /** A render starts, after waiting `queueDelayMs` (0 when it started on arrival). */
  started (_now: number, _queueDelayMs: number): void {
    this.#running++
  }

  /** A render ended after `serviceMs` of running; Infinity for one that stops counting (a stream). */
  finished (now: number, serviceMs: number): void {
    const running = this.#running
    if (running > 0) this.#running--
    this.#ends[this.#slot(now)]!++
    if (serviceMs < LONG_LIVED && running > 0 && ++this.#ended > WARM_RENDERS) {
      const sample = serviceMs / running
      this.#drain = this.#drain === 0 ? sample : this.#drain + NEW_WEIGHT * (sample - this.#drain)
    }
  }

  /** The state now, judged from the clock: for reports between events. */
  stateNow (queued: number): AdmissionState {
    this.#judge(this.#clock(), queued)
    return this.#state
  }

  #judge (now: number, queued: number): void {
    const id = Math.floor(now / this.#slotMs)
    const halfMs = HALF * this.#slotMs
    let overloaded = this.#drain > 0
    let ends = 0
    let rejects = 0
    for (let half = 0; half < 2; half++) {
      let a = 0
      let e = 0
      for (let k = half * HALF; k < (half + 1) * HALF; k++) {
        const i = (id - k) % SLOTS
        if (this.#ids[i] !== id - k) continue
        a += this.#arrivals[i]!
        e += this.#ends[i]!
        rejects += this.#rejects[i]!
      }
      ends += e
      if (a < MIN_ARRIVALS || (a - e) * this.#drain <= MARGIN * halfMs) overloaded = false
    }
    if (rejects >= STORM_MIN && rejects >= STORM_RATIO * Math.max(1, ends)) this.#storm = true
    else if (rejects === 0 && queued === 0) this.#storm = false
    switch (this.#state) {
      case 'normal':
      case 'queueing':
        this.#become(overloaded && queued > 0 ? 'shedding' : queued > 0 ? 'queueing' : 'normal')
        break
      case 'shedding':
        if (!overloaded) this.#become(queued > 0 ? 'recovering' : 'normal')
        break
      case 'recovering':
        if (overloaded) this.#become('shedding')
        else if (queued === 0) this.#become('normal')
        break
    }
  }

  #become (state: AdmissionState): void {
    this.#state = state
  }

  /** The window slot for `now`, cleared when it starts a new span. */
  #slot (now: number): number {
    const id = Math.floor(now / this.#slotMs)
    const i = id % SLOTS
    if (this.#ids[i] !== id) { this.#ids[i] = id; this.#arrivals[i] = 0; this.#rejects[i] = 0; this.#ends[i] = 0 }
    return i
  }
}
