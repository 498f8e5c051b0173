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
// - shedding: more work arrives than the thread can do. Seen in one of two ways:
//   - a step: in each of four short spans in a row (50 ms, or three renders if longer),
//     renders arrived at 1.5 times the thread's pace or faster (2 times over the four), with
//     a queue waiting. Arrivals paced by the answers (a request on a connection right after
//     its last answer) are left out: they cannot outrun the thread, however the loop batches
//     them. First requests on new connections count: they are how an open load grows. A
//     clump (a rate-limited client's second of requests at once, clients connecting or
//     reconnecting) is over within a span or two, three when a starved client spreads it:
//     what follows comes at the pace of the answers. A steep step (2.5 times the pace or
//     more in each of three spans in a row) is seen a span sooner. A step to 3x is seen
//     about 150 ms after it begins (later where the thread gets less of a core than its
//     pace implies, so that 3x of what it serves is less than 3x its pace:
//     docs/overload.md#when-a-step-is-seen-late), and the renders queued until then are
//     cut oldest first, so no 503 of the onset waits much longer than that. The queue's growth says
//     it too: in each of three spans in a row more renders were let in (paced requests
//     included) than ended, by 1.5 times the pace over the three. Clients that wait for
//     their answers cannot make it grow, so this rule needs no arrival left out.
//   - a climb: the renders that arrived over the last `budget` ms ask for more than 1.25
//     times that long, and the queue keeps overflowing the budget (not one clump, which
//     overflows once and drains). This catches overloads too mild for the step rule.
//   Waiting would only grow, so the queue is held to `target` ms: what is served is served
//   soon, the rest gets a fast 503, and the renders that waited longest are cut first. The
//   state holds while, over the last slot or two of the window, more arrives than the thread
//   can do at its pace.
// - recovering: arrivals fell back within capacity. The bound stays `target` until the queue
//   from the overload has drained and the arrivals of the whole window (the last `budget`
//   ms) fit the thread's pace, then normal. An overload whose arrivals pause for a slot or
//   two (a client or proxy that stalls, then sends what it owes at once) so finds the bound
//   still tight: back in normal, its catch-up would be queued up to the budget, and cut
//   again once the overload showed, each 503 after a long wait.
// A retry storm (clients that ask again the moment a 503 arrives) is a special case of
// shedding: the clients' number, not their rate, bounds the work, so shedding them only buys
// more 503s. The bound goes back to `budget`, and the host holds the 503s of immediate
// retries (retryHold) so they cannot spin the thread. It is told by what the clients do, not
// by how many 503s there are: the host marks an arrival that comes on a connection right
// after that connection's 503, and a storm is when most arrivals are such retries. (An open
// load whose clients queue requests on a fixed set of connections looks the same once those
// queues fill: its next request follows each 503 at once. Not telling them apart, as an
// overload that began as a step, kept 100 closed-loop clients that retry at once from being
// seen as a storm when they opened their connections over 200 ms: 0.56x of the throughput.) (A count
// of 503s per render ended mistakes an open-loop overload whose renders slowed down for a
// storm, and the storm's wide bound then keeps a long queue.)
//
// The wait of an arrival is predicted from the drain rate: the time between two ends while
// the thread works without a break (a moving average). The step rule and whether an
// overload goes on are judged against the pace: the busy time of the thread per render
// (over the last PACE_ENDS samples, taken at every end or at some of them), which the host
// reads (the thread's CPU time, or its event loop's active time). The gap between ends
// says less: a lone render that waits for I/O takes longer than its share of a full load,
// and renders that run side by side end in pairs. A host that cannot see its loop (the
// render pool, whose renders run on other threads) gives no busy time; its pace is the
// drain rate measured while its slots were all busy or renders waited.

export const ADMISSION_STATES = ['normal', 'queueing', 'shedding', 'recovering'] as const
export type AdmissionState = typeof ADMISSION_STATES[number]

/** What to do with an arriving render: let it in (start or wait), or shed it and why. */
export type AdmissionVerdict = 'admit' | 'backlog' | 'overload'

export interface AdmissionParams {
  /**
   * ms: an arrival whose predicted wait passes this is shed ('backlog'); also the span over
   * which arrivals are weighed against capacity. Default 1000 (maxBacklog).
   */
  budget: number
  /** ms: the predicted wait an arrival may have while shedding ('overload'); 0 keeps `budget`. Default 10 (overloadBacklog). */
  target: number
  /**
   * Renders that end before the drain rate and the pace are measured (WARM_RENDERS); until
   * then nothing is held back. Default 4, for a worker's thread. A render pool, whose slots
   * (`threads × threadConcurrency`) all start cold at once, passes 4 per slot: with 4, a
   * plain Fastify server with the Next.js example on 2 pool threads, loaded by 32 clients
   * as it started, shed 3-107 requests in its first second in six of eight starts (the drain
   * measured on its first, cold renders); with 32, none in eight.
   */
  warmRenders?: number
}

/**
 * Renders that end before the drain rate is measured, by default (`warmRenders`): the first
 * ones of a thread run cold (the JIT, the framework's caches), often ten times slower, and
 * would make every wait look long. Until then nothing is held back.
 */
export const WARM_RENDERS = 4
/** Weight of the newest sample in the moving average of ms per completion. */
const NEW_WEIGHT = 0.2
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
/**
 * The step rule's span, in ms: at least this long, and at least three renders at the pace
 * (STEP_PACES), so that a span holds a few renders' worth of arrivals: a busy loop reads its
 * sockets between renders, so arrivals come in batches. Four spans of 50 ms outlast the
 * ramp of a client opening its connections: autocannon's 50 connections on a 2-core
 * machine it shares send their first requests over about 150 ms, which four spans of 25 ms
 * took for a step (23-32 of 1,610 pages shed in the rolling-restart benchmark). Not longer,
 * because the renders served before a step is seen wait the longer.
 */
const STEP_SPAN = 50
const STEP_PACES = 3
/** Spans in a row the step rule needs: a clump can straddle two, a starved client's three. */
const STEP_RUN = 4
/**
 * How much faster than the pace renders must arrive in each of those spans (STEP_EACH) and
 * over all of them (STEP_ALL). A sustained 2x or more passes both; a random (Poisson) load
 * at 0.8x now and then passes them on slow renders, whose spans hold few arrivals (the
 * fake-clock scenarios).
 */
const STEP_EACH = 1.5
const STEP_ALL = 2
/**
 * A steep step is seen one span sooner: renders arrived at STEEP_EACH times the pace or
 * faster in each of the last STEEP_RUN spans. An open load at 3x does that within about
 * 150 ms (its spans ran at 3-6 times the pace at the onset on the Next.js example; renders
 * arrive in batches as the loop reads its sockets), so the renders served and shed in its
 * onset wait a span less. A client's clump does not: in the rolling-restart benchmark,
 * autocannon's 50 connections opening at once were 2.4 times the pace at most in one span
 * and 2.0 at most in three in a row (29 samples over three rounds), and Poisson arrivals at
 * 0.8x almost never are: on 13 ms renders a span fits about 4 and gets 3 on average, and
 * three in a row of 10 or more come about once in 400 million spans.
 */
const STEEP_RUN = 3
const STEEP_EACH = 2.5
/**
 * The growth rule, the third way a step is seen: in each of the last GROWTH_RUN spans the
 * queue grew (all arrivals less the renders that ended) by at least GROWTH_EACH times what
 * the thread does at its pace in a span, and by GROWTH_ALL times over all of them. Here every
 * arrival let in counts, paced ones too (a 503 does not join the queue): a client that waits
 * for its answers adds an arrival only as a render ends, so closed-loop clients cannot make
 * the queue grow, however many there are, nor can clients that retry their 503s at once.
 * First requests on new connections do not count: each connection brings one, so what they
 * add is bounded by the clients' number, not their rate (the step rule counts them). Counted,
 * they made a rate-limited client starting from idle (autocannon -R at half of capacity, its
 * connections opening while it sends the first second's requests) look like a step: in the
 * fake-clock scenario of it, and in the rolling-restart benchmark on a slower day (0-25
 * Next.js pages shed a round in six rounds, against 0-2 in seven without them). The price:
 * an open load that grows by opening connections is seen by its growth only once it reuses
 * them (docs/overload.md#admission).
 * An open load at 3x grows it by about twice the pace in every span from its first, while
 * the step rule above, which leaves out arrivals within PACED_WINDOW_MS of their
 * connection's last answer, counted barely 2x at such an onset when the load generator
 * reused connections as their answers came (steps seen 135-276 ms after they began). A clump
 * grows it in one span and then drains; the steepest one measured (2.0 times the pace in
 * three spans in a row) grows it by about 1x the pace in each.
 */
const GROWTH_RUN = 3
const GROWTH_EACH = 0.5
const GROWTH_ALL = 1.5
/**
 * The step rule counts arrivals in buckets of this many ms, kept for STEP_BUCKETS of them:
 * 640 ms, so renders slower than about 50 ms (whose four spans would not fit) are left to
 * the climb rule.
 */
const BUCKET_MS = 5
const STEP_BUCKETS = 128
/** Ends over which the pace is measured. */
const PACE_ENDS = 8
/**
 * While the process restarts a worker (`restarting`), the bound of the queueing state is this
 * many times the budget. A replacement's start-up (loading the app, its warm-up renders)
 * takes about a core for one to three seconds, and a worker that drains sends its clients to
 * the others: for those seconds the serving workers have less of the machine and more of the
 * load, so a burst that fits the budget at full strength takes up to about twice as long.
 * Measured on the Next.js example (2 workers, 2 cores, autocannon -R at half of capacity,
 * whose second's requests come at once): the last render of a burst waited 0.5-0.9 s before a
 * SIGHUP and up to 1.26 s while a replacement started, and 2-46 of about 1,000 pages a round
 * were shed. Overload is still told by the step and climb rules, and the tight bound is
 * unchanged: a deploy under overload sheds as before.
 */
const RESTART_STRETCH = 2
/** Renders that run this long (ms) are streams (SSE, slow downloads): their time says nothing of the drain rate. */
export const LONG_LIVED = 10_000

export class AdmissionController {
  readonly #budget: number
  readonly #target: number
  readonly #clock: () => number
  readonly #slotMs: number
  #state: AdmissionState = 'normal'
  #storm = false
  #restarting = false
  #running = 0
  /** Renders that end before the drain and the pace are measured (warmRenders). */
  readonly #warm: number
  /** Mean ms between completions at the concurrency seen; 0 until `#warm` renders have ended. */
  #drain = 0
  /** Busy ms of the thread per render (see the file's head); 0 until measured. */
  #pace = 0
  // The last PACE_ENDS busy-time samples (ms) and the count of ends at each, oldest at #paceAt.
  readonly #busyAt = new Float64Array(PACE_ENDS)
  readonly #endsAt = new Float64Array(PACE_ENDS)
  #paceAt = 0
  #samples = 0
  #ended = 0
  /** When the last render ended, or the thread last started to work after an idle spell, on the work clock. */
  #lastEnd = 0
  /** undefined: the drain is measured on `#clock`. */
  readonly #workClock: (() => number) | undefined
  /** Whether renders were waiting or still running when the last one ended. */
  #lastEndFull = false
  // Per slot of the window, each slot tagged with its number: arrivals (first requests on a
  // connection left out), all arrivals, rejections and immediate retries.
  readonly #arrivals = new Uint32Array(SLOTS)
  readonly #all = new Uint32Array(SLOTS)
  readonly #rejects = new Uint32Array(SLOTS)
  readonly #retries = new Uint32Array(SLOTS)
  readonly #ids = new Float64Array(SLOTS).fill(-1)
  // Per BUCKET_MS bucket, for the step rule, each bucket tagged with its number: arrivals
  // (paced ones left out), arrivals let in (paced ones too), and renders ended.
  readonly #recent = new Uint32Array(STEP_BUCKETS)
  readonly #recentAll = new Uint32Array(STEP_BUCKETS)
  readonly #recentEnds = new Uint32Array(STEP_BUCKETS)
  readonly #recentIds = new Float64Array(STEP_BUCKETS).fill(-1)

  /**
   * `clock`: ms now. `workClock`: the thread's working time so far in ms (its event loop's
   * active time), when the host can read it: the drain is then measured on it, so renders
   * that wait on I/O side by side (a loader's fetch, a timer) do not look slow. On the wall
   * clock, ten such renders of 1.5 s that end together left a drain of tens of ms, and the
   * next burst of ten was predicted to wait past the budget and partly shed, on an idle
   * worker.
   */
  constructor (params: AdmissionParams, clock: () => number = () => performance.now(), workClock?: () => number) {
    if (!(params.budget > 0)) throw new RangeError('budget must be above 0')
    if (!(params.target >= 0) || params.target >= params.budget) throw new RangeError('target must be from 0 to below budget')
    if (params.warmRenders !== undefined && !(Number.isInteger(params.warmRenders) && params.warmRenders >= 0)) throw new RangeError('warmRenders must be a whole number from 0')
    this.#budget = params.budget
    this.#target = params.target > 0 ? params.target : params.budget
    this.#clock = clock
    this.#workClock = workClock
    this.#slotMs = params.budget / SLOTS
    this.#warm = params.warmRenders ?? WARM_RENDERS
  }

  /** The state as of the last event. */
  get state (): AdmissionState { return this.#state }
  /** Whether clients retry into the 503s (see the file's head): immediate retries should be held. */
  get storm (): boolean { return this.#storm }
  /** Mean ms between completions (0 before the first). */
  get drain (): number { return this.#drain }
  /** The latency budget, ms (maxBacklog). */
  get budget (): number { return this.#budget }
  /** Busy ms of the thread per render (0 before it is measured). */
  get pace (): number { return this.#pace }
  /** Renders started and not finished. */
  get running (): number { return this.#running }
  /**
   * Whether the process is restarting a worker (another thread starts up or drains): a burst
   * may then wait up to RESTART_STRETCH times the budget (see there). Set by the host.
   */
  get restarting (): boolean { return this.#restarting }
  set restarting (on: boolean) { this.#restarting = on }
  /**
   * Whether the host should run one render at a time (with one waiting): while shedding,
   * outside a retry storm. Two CPU-bound renders side by side each take twice as long, so a
   * page served past capacity would wait for both (docs/overload.md, Admission).
   */
  get oneAtATime (): boolean { return this.#state === 'shedding' && !this.#storm }

  /**
   * A render arrives and finds `queued` renders waiting, `busy` running and room for
   * `capacity` at once. 'admit': start it (or queue it when no slot is free). `fresh`: the
   * first request on its connection. A client that moves its connections here (another
   * worker drains, or hands connections off to even the load) brings first requests with
   * no render of its own ending here before them; they are left out of the flow, so a load
   * that moves is not taken for a load that grows. `retry`: it came on a connection right
   * after that connection's 503 (an immediate retry; see the file's head). `paced`: it came
   * on a connection right after that connection's last answer; the step rule leaves such
   * arrivals out, since they cannot outrun the thread. First requests count toward the step
   * rule and whether an overload goes on: new connections are how an open load grows.
   */
  arrive (now: number, queued: number, busy: number, capacity: number, fresh = false, retry = false, paced = false): AdmissionVerdict {
    const slot = this.#slot(now)
    if (!fresh) this.#arrivals[slot]!++
    this.#all[slot]!++
    const bucket = this.#bucket(now)
    if (!paced) this.#recent[bucket]!++
    if (retry) this.#retries[slot]!++
    this.#judge(now, queued, queued > 0 && this.#state !== 'shedding' && this.#step(now))
    // What joins the queue or starts counts toward its growth; a 503 does not, nor a first
    // request (see GROWTH_RUN).
    if (this.#admits(queued, busy, capacity)) { if (!fresh) this.#recentAll[bucket]!++; return 'admit' }
    this.#rejects[slot]!++
    return this.#tight() ? 'overload' : 'backlog'
  }

  /** Whether the tight bound (`target`) holds: while shedding or recovering, outside a retry storm. */
  #tight (): boolean {
    return (this.#state === 'shedding' || this.#state === 'recovering') && !this.#storm
  }

  /** Whether an arrival that finds `queued` waiting and `busy` of `capacity` running may start or wait. */
  #admits (queued: number, busy: number, capacity: number): boolean {
    if (queued === 0 && busy < capacity) return true
    // One render may always wait: the thread never idles between two renders for want of one.
    if (queued === 0 || this.#drain === 0) return true
    return (queued + 1) * this.#drain <= (this.#tight() ? this.#target : this.#restarting ? RESTART_STRETCH * this.#budget : this.#budget)
  }

  /**
   * How many of `queued` waiting renders to cut, oldest first: while shedding (not in a
   * storm), those beyond `target`. They joined under the burst bound before the overload
   * showed; the oldest have waited longest, and served now they would be the slowest pages
   * (CoDel drops at the head for the same reason). Ask after every arrival, admitted or not.
   */
  excess (queued: number): number {
    if (this.#state !== 'shedding' || this.#storm || this.#drain === 0) return 0
    return Math.max(0, queued - Math.max(1, Math.floor(this.#target / this.#drain)))
  }

  /**
   * A render was shed by the host for a reason of its own (pressure, a wait past
   * maxQueueTime, a cut from the queue): it counts toward a retry storm. `retry` as in arrive().
   */
  rejected (now: number, retry = false): void {
    const slot = this.#slot(now)
    this.#arrivals[slot]!++
    this.#all[slot]!++
    this.#rejects[slot]!++
    if (retry) this.#retries[slot]!++
  }

  /** A render starts, after waiting `queueDelayMs` (0 when it started on arrival). */
  started (now: number, _queueDelayMs: number): void {
    // An idle thread starts to work: the time to the next end is one render's.
    if (this.#running++ === 0) this.#lastEnd = this.#workClock?.() ?? now
  }

  /**
   * A render ended after `serviceMs` of running (Infinity for one that stops counting: a
   * stream), with `queued` renders waiting; `busyMs`: the thread's busy time so far (its
   * CPU time, or its event loop's active time), if the host can see it. A host may sample it
   * at some ends only (NaN at the others): the pace spans the last PACE_ENDS samples and
   * the ends between them.
   */
  finished (now: number, serviceMs: number, queued = 0, busyMs = NaN): void {
    if (this.#running > 0) this.#running--
    this.#recentEnds[this.#bucket(now)]!++
    // The drain rate is the time between ends while the thread works without a break: the
    // pace the CPU sets, not the time a response took to reach a slow client.
    const work = this.#workClock?.() ?? now
    const gap = work - this.#lastEnd
    this.#lastEnd = work
    // Without a busy time: flat out when renders waited, or ran side by side, at this end and the one before.
    const full = queued > 0 || this.#running >= 1
    const flatOut = this.#lastEndFull && full
    this.#lastEndFull = full
    if (serviceMs < LONG_LIVED && ++this.#ended > this.#warm) {
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

  /** The state now, judged from the clock: for reports between events. */
  stateNow (queued: number): AdmissionState {
    this.#judge(this.#clock(), queued)
    return this.#state
  }

  /** `step`: the step rule holds (see the file's head). */
  #judge (now: number, queued: number, step = false): void {
    const id = Math.floor(now / this.#slotMs)
    let arrivals = 0
    let rejects = 0
    let retries = 0
    // All arrivals over this slot and the one before: whether an overload goes on.
    let lately = 0
    // All arrivals over the window: whether a recovery is over.
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
    const climb = this.#drain > 0 && arrivals >= MIN_ARRIVALS && arrivals * this.#drain > OVERLOAD * this.#budget &&
      this.#steady(id)
    const overloaded = climb || step
    // It goes on while more arrives than the thread can do at its pace, over the span from
    // the start of the slot before. (Not while a share of the arrivals is shed: arrivals read
    // in batches overflow the tight bound at loads well below capacity.)
    const goesOn = overloaded || lately * this.#pace > now - (id - 1) * this.#slotMs
    if (retries >= STORM_MIN && retries >= STORM_SHARE * arrivals) this.#storm = true
    else if ((rejects > 0 && retries < CALM_SHARE * arrivals) || (rejects === 0 && queued === 0)) this.#storm = false
    switch (this.#state) {
      case 'normal':
      case 'queueing':
        this.#become(overloaded && queued > 0 ? 'shedding' : queued > 0 ? 'queueing' : 'normal')
        break
      case 'shedding':
        if (!goesOn) this.#become('recovering')
        break
      case 'recovering':
        if (overloaded) this.#become('shedding')
        // The window's arrivals fit its span at the pace (see the file's head).
        else if (queued === 0 && all * this.#pace <= now - (id - SLOTS + 1) * this.#slotMs) this.#become('normal')
        break
    }
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

  /**
   * The step rule: in each of the last STEP_RUN spans (the newest ending now) renders arrived
   * at STEP_EACH times the pace or faster, and at STEP_ALL times over all of them; or, a
   * steep step, at STEEP_EACH times in each of the last STEEP_RUN spans.
   */
  #step (now: number): boolean {
    if (this.#pace === 0) return false
    const perSpan = Math.ceil(Math.max(STEP_SPAN, STEP_PACES * this.#pace) / BUCKET_MS)
    if (perSpan * STEP_RUN > STEP_BUCKETS) return false
    const fits = perSpan * BUCKET_MS / this.#pace
    const newest = Math.floor(now / BUCKET_MS)
    if (this.#grows(newest, perSpan, fits)) return true
    let total = 0
    // Spans in a row, from the newest, at STEEP_EACH times the pace or faster.
    let steep = 0
    for (let span = 0; span < STEP_RUN; span++) {
      const count = this.#inSpan(this.#recent, newest, perSpan, span)
      if (count < STEP_EACH * fits) return false
      if (steep === span && count >= STEEP_EACH * fits) steep++
      if (steep === STEEP_RUN) return true
      total += count
    }
    return total >= STEP_ALL * STEP_RUN * fits
  }

  /** The growth rule (GROWTH_RUN): spans of `perSpan` buckets back from bucket `newest`, `fits` renders at the pace in each. */
  #grows (newest: number, perSpan: number, fits: number): boolean {
    let total = 0
    for (let span = 0; span < GROWTH_RUN; span++) {
      const growth = this.#inSpan(this.#recentAll, newest, perSpan, span) - this.#inSpan(this.#recentEnds, newest, perSpan, span)
      if (growth < GROWTH_EACH * fits) return false
      total += growth
    }
    return total >= GROWTH_ALL * GROWTH_RUN * fits
  }

  /** The sum of `counts` over span `span` (0: the newest) of `perSpan` buckets back from bucket `newest`. */
  #inSpan (counts: Uint32Array, newest: number, perSpan: number, span: number): number {
    let sum = 0
    for (let b = 0; b < perSpan; b++) {
      const bucket = newest - span * perSpan - b
      const i = bucket % STEP_BUCKETS
      if (this.#recentIds[i] === bucket) sum += counts[i]!
    }
    return sum
  }

  /** The step rule's bucket for `now`, cleared when it starts a new span of time. */
  #bucket (now: number): number {
    const id = Math.floor(now / BUCKET_MS)
    const i = id % STEP_BUCKETS
    if (this.#recentIds[i] !== id) { this.#recentIds[i] = id; this.#recent[i] = 0; this.#recentAll[i] = 0; this.#recentEnds[i] = 0 }
    return i
  }

  #become (state: AdmissionState): void {
    this.#state = state
  }

  /** The window slot for `now`, cleared when it starts a new span. */
  #slot (now: number): number {
    const id = Math.floor(now / this.#slotMs)
    const i = id % SLOTS
    if (this.#ids[i] !== id) { this.#ids[i] = id; this.#arrivals[i] = 0; this.#all[i] = 0; this.#rejects[i] = 0; this.#retries[i] = 0 }
    return i
  }
}
