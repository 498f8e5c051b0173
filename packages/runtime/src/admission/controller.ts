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
// The rules live beside it, each in a file of its own with its thresholds: the thread's
// drain and pace (pace.ts), the step rule (step-rule.ts), and the demand window with the
// climb rule and the retry storm (demand-window.ts). This file holds the states, the bounds
// and when one state gives way to another.

import { DemandWindow } from './demand-window.ts'
import { PaceMeter, WARM_RENDERS } from './pace.ts'
import { StepRule } from './step-rule.ts'

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

export { LONG_LIVED, WARM_RENDERS } from './pace.ts'

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
export class AdmissionController {
  readonly #budget: number
  readonly #target: number
  readonly #clock: () => number
  #state: AdmissionState = 'normal'
  #storm = false
  #restarting = false
  #running = 0
  readonly #meter: PaceMeter
  readonly #step = new StepRule()
  readonly #window: DemandWindow

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
    this.#meter = new PaceMeter(params.warmRenders ?? WARM_RENDERS, workClock)
    this.#window = new DemandWindow(params.budget)
  }

  /** The state as of the last event. */
  get state (): AdmissionState { return this.#state }
  /** Whether clients retry into the 503s (see the file's head): immediate retries should be held. */
  get storm (): boolean { return this.#storm }
  /** Mean ms between completions (0 before the first). */
  get drain (): number { return this.#meter.drain }
  /** The latency budget, ms (maxBacklog). */
  get budget (): number { return this.#budget }
  /** Busy ms of the thread per render (0 before it is measured). */
  get pace (): number { return this.#meter.pace }
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
    this.#window.arrived(now, fresh, retry)
    this.#step.arrived(now, paced)
    this.#judge(now, queued, queued > 0 && this.#state !== 'shedding' && this.#step.holds(now, this.#meter.pace))
    // What joins the queue or starts counts toward its growth; a 503 does not, nor a first
    // request (step-rule.ts, the growth rule).
    if (this.#admits(queued, busy, capacity)) { if (!fresh) this.#step.joined(now); return 'admit' }
    this.#window.refused(now)
    return this.#tight() ? 'overload' : 'backlog'
  }

  /** Whether the tight bound (`target`) holds: while shedding or recovering, outside a retry storm. */
  #tight (): boolean {
    return (this.#state === 'shedding' || this.#state === 'recovering') && !this.#storm
  }

  /** Whether an arrival that finds `queued` waiting and `busy` of `capacity` running may start or wait. */
  #admits (queued: number, busy: number, capacity: number): boolean {
    if (queued === 0 && busy < capacity) return true
    const drain = this.#meter.drain
    // One render may always wait: the thread never idles between two renders for want of one.
    if (queued === 0 || drain === 0) return true
    return (queued + 1) * drain <= (this.#tight() ? this.#target : this.#restarting ? RESTART_STRETCH * this.#budget : this.#budget)
  }

  /**
   * How many of `queued` waiting renders to cut, oldest first: while shedding (not in a
   * storm), those beyond `target`. They joined under the burst bound before the overload
   * showed; the oldest have waited longest, and served now they would be the slowest pages
   * (CoDel drops at the head for the same reason). Ask after every arrival, admitted or not.
   */
  excess (queued: number): number {
    const drain = this.#meter.drain
    if (this.#state !== 'shedding' || this.#storm || drain === 0) return 0
    return Math.max(0, queued - Math.max(1, Math.floor(this.#target / drain)))
  }

  /**
   * A render was shed by the host for a reason of its own (pressure, a wait past
   * maxQueueTime, a cut from the queue): it counts toward a retry storm. `retry` as in arrive().
   */
  rejected (now: number, retry = false): void {
    this.#window.rejected(now, retry)
  }

  /** A render starts, after waiting `queueDelayMs` (0 when it started on arrival). */
  started (now: number, _queueDelayMs: number): void {
    if (this.#running++ === 0) this.#meter.startedWork(now)
  }

  /**
   * A render ended after `serviceMs` of running (Infinity for one that stops counting: a
   * stream), with `queued` renders waiting; `busyMs`: the thread's busy time so far (its
   * CPU time, or its event loop's active time), if the host can see it. A host may sample it
   * at some ends only (NaN at the others): the pace spans the last samples and the ends
   * between them (pace.ts).
   */
  finished (now: number, serviceMs: number, queued = 0, busyMs = NaN): void {
    if (this.#running > 0) this.#running--
    this.#step.ended(now)
    this.#meter.ended(now, serviceMs, queued, this.#running, busyMs)
  }

  /** The state now, judged from the clock: for reports between events. */
  stateNow (queued: number): AdmissionState {
    this.#judge(this.#clock(), queued)
    return this.#state
  }

  /** `step`: the step rule holds (step-rule.ts). */
  #judge (now: number, queued: number, step = false): void {
    const window = this.#window
    const pace = this.#meter.pace
    window.read(now, this.#meter.drain)
    const overloaded = window.climb || step
    // It goes on while more arrives than the thread can do at its pace, over the span from
    // the start of the slot before. (Not while a share of the arrivals is shed: arrivals read
    // in batches overflow the tight bound at loads well below capacity.)
    const goesOn = overloaded || window.lately * pace > window.latelyMs
    this.#storm = window.storm(this.#storm, queued)
    switch (this.#state) {
      case 'normal':
      case 'queueing':
        this.#state = overloaded && queued > 0 ? 'shedding' : queued > 0 ? 'queueing' : 'normal'
        break
      case 'shedding':
        if (!goesOn) this.#state = 'recovering'
        break
      case 'recovering':
        if (overloaded) this.#state = 'shedding'
        // The window's arrivals fit its span at the pace (see the file's head).
        else if (queued === 0 && window.all * pace <= window.allMs) this.#state = 'normal'
        break
    }
  }
}
