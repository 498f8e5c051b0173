// Admission of renders in one thread. Renders that would only slow each other down wait
// in a short first-in-first-out queue instead of interleaving on the event loop, and a new
// render is shed at once when the work already ahead of it passes the bound.
//
// - Running: a render starts at once while fewer than MIN_RUNNING run, or while the renders
//   running need little loop time (running x cost below RUN_AHEAD), or when the loop had
//   idle time since the last look (the running renders are waiting for I/O, not for the
//   CPU). A CPU-bound app thus runs two renders at a time: one fills the other's short
//   waits between its stages, and each turn of the loop holds at most two renders' steps,
//   so a request to be shed, a probe or a cache hit is looked at within milliseconds. An
//   app of cheap renders runs a few more; an I/O-bound app runs as many as its I/O allows.
//   Far past capacity (arrivals ask for SINGLE_LOAD times the loop), an app runs one at a
//   time, a second only while the loop idles or the running one needs less than
//   SINGLE_RUN_AHEAD: the render waiting starts the moment the running one ends, so the loop
//   stays as busy, and a served render is not slowed by a neighbour (renders cheap enough to
//   overlap at ordinary load included).
// - Queued: the rest wait in arrival order; each start takes the oldest. A queued request
//   whose client went away is dropped, one that waited past maxQueueTime is shed.
// - Ahead: (queued x cost) plus the running renders' share (at most what room allows). Past
//   maxBacklog, the new render is shed, unless nothing is queued yet: one render may always
//   wait its turn, so the loop never idles between two renders for want of one. `cost` is loop
//   time per render, measured from the thread's event-loop utilization while renders run, so
//   the bound fits the app.
// - Catching up: a worker whose arrivals ask for at most CATCH_UP_LOAD of its loop time
//   queues past maxBacklog, up to CATCH_UP_BACKLOG times it. Its queue grew in a stall (a
//   garbage collection, a core taken by another thread) or from a few arrivals close together,
//   and drains by itself; shedding there would turn ordinary load into errors. A worker that
//   keeps up over time (the arrivals of the last SUSTAINED_WINDOW ms, with no quiet stretch
//   among them, ask for at most KEEPING_UP of its loop) catches up from a clump of arrivals
//   that asks for up to SINGLE_LOAD, and queues up to KEPT_UP_BACKLOG times maxBacklog:
//   short windows of an ordinary load swing that far. A burst from calm, too short to judge,
//   gets maxBacklog.
// - Overload: a worker that shed for backlog in the last OVERLOAD_HOLD ms while the renders
//   arriving ask for more loop time than passes (arrivals x cost over the last 250-500 ms,
//   or, after a quiet stretch, over what arrived since, above OVERLOAD_LOAD, and, for a
//   worker that keeps up over time, above SINGLE_LOAD) is past its capacity, not in a burst.
//   It holds its queue to the shorter overloadBacklog (and past SINGLE_LOAD runs one render
//   at a time), so what it admits is served sooner, and sheds (reason 'overload') the
//   renders that queued beyond the bound before the overload showed, while their 503 is
//   still fast. From then on a render that arrives at a full queue takes the place of the
//   oldest one waiting, if that one has waited at most TRIM_AGE: the old one gets its 503
//   at once, the queue holds the latest arrivals, and the render that starts next has waited
//   a gap or two between arrivals instead of the renders ahead of it. Past capacity some
//   render is shed either way; this way the served ones wait least. Near capacity the
//   arrivals ask for less than the loop has, and a burst (all at once, from calm) still gets
//   the full maxBacklog and two renders at a time.
import type { FastifyReply } from 'fastify'
import type { ServerResponse } from 'node:http'
import { performance, type EventLoopUtilization } from 'node:perf_hooks'

/** Renders that may always run at once. */
const MIN_RUNNING = 2
/** Loop time, in ms, the running renders may need before a new one waits its turn. */
const RUN_AHEAD = 15
/**
 * Far past capacity, the loop time, in ms, the running renders may need before a new one
 * waits its turn: renders that cheap add little to each other's time (an API route, a page
 * served from data in memory), while one at a time would leave them waiting for the loop's
 * turns.
 */
const SINGLE_RUN_AHEAD = 5
/** After a render was shed for backlog, how long, in ms, the overload bound applies. */
const OVERLOAD_HOLD = 500
/** Span, in ms, of the window over which render arrivals are counted (with the one before it). */
const RATE_WINDOW = 250
/** A window of arrivals open this long, in ms, held a quiet stretch and is not weighed. */
const QUIET = 1000
/**
 * Arrivals are weighed once they span this many ms, and this many renders' loop time: a burst
 * after a quiet stretch (which the renders it starts spread over their first steps) is not
 * yet an overload.
 */
const MIN_SPAN = 50
const MIN_SPAN_RENDERS = 2
/** Loop time the arriving renders ask for, as a share of the time passing, past which a worker is overloaded. */
const OVERLOAD_LOAD = 1.4
/** The same share past which an overloaded worker runs one render at a time (a second only while its loop idles). */
const SINGLE_LOAD = 2
/**
 * Arrivals that ask for at most this share of the loop time let a worker queue past
 * maxBacklog, up to CATCH_UP_BACKLOG times it: the queue drains by itself.
 */
const CATCH_UP_LOAD = 1.2
const CATCH_UP_BACKLOG = 2
/** Span, in ms, of the arrivals that tell whether a worker keeps up over time: SLOTS windows. */
const SUSTAINED_WINDOW = 2000
const SLOTS = SUSTAINED_WINDOW / RATE_WINDOW
/** Arrivals of the last SUSTAINED_WINDOW ms that ask for at most this share of the loop time: the worker keeps up. */
const KEEPING_UP = 1
/** How far past maxBacklog, as a multiple of it, a worker that keeps up may queue. */
const KEPT_UP_BACKLOG = 3
/** A queued render that has waited longer than this, in ms, stays when the queue is cut: its 503 would not be fast. */
const TRIM_AGE = 20
/** How often, in ms, a non-empty queue checks whether the loop has idle time. */
const POLL = 2
/** Share of the last poll interval the loop must have idled for another render to start. */
const IDLE_TO_START = 0.25
/** Completed renders, or ms, that make one sample of the cost per render. */
const SAMPLE_RENDERS = 8
const SAMPLE_MS = 500
/** Weight of the newest sample in the moving average of the cost per render. */
const NEW_WEIGHT = 0.3
/** A render still running after this long is a stream (SSE, a slow download): it stops counting. */
const LONG_LIVED = 10_000

type Start = () => void
interface Waiting { reply: FastifyReply, start: Start, arrived: number }

export class Backlog {
  readonly #maxBacklog: number
  readonly #overloadBacklog: number
  readonly #maxQueueTime: number
  readonly #shed: (reply: FastifyReply, reason: 'queueTime' | 'overload') => void
  /** Running renders, in start order, with their start time. */
  readonly #running = new Map<ServerResponse, number>()
  #queue: Waiting[] = []
  #head = 0
  #timer: NodeJS.Timeout | undefined
  #lastShedAt = -Infinity
  // Render arrivals in the current window, and in the one before it with its span.
  #arrivals = 0
  #windowStart = 0
  #before = 0
  #beforeSpan = 0
  // Render arrivals per RATE_WINDOW over the last SUSTAINED_WINDOW (a ring of SLOTS counts,
  // each with the number of its window), and since when they have come without a quiet stretch.
  readonly #slotCounts = new Uint32Array(SLOTS)
  readonly #slotIds = new Float64Array(SLOTS).fill(-1)
  #activeSince = 0
  #lastArrival = -Infinity
  #pollElu: EventLoopUtilization | undefined
  readonly #onClose: (this: ServerResponse) => void

  // Cost per render: loop time while renders run, over the renders completed.
  #cost = 0
  #busy = 0
  #completed = 0
  #sampleStart = 0
  /** Samples taken; the first covers cold renders (first compiles, caches filling) and is dropped. */
  #samples = 0
  #busyElu: EventLoopUtilization | undefined

  constructor (maxBacklog: number, overloadBacklog: number, maxQueueTime: number, shed: (reply: FastifyReply, reason: 'queueTime' | 'overload') => void) {
    this.#maxBacklog = maxBacklog
    this.#overloadBacklog = overloadBacklog
    this.#maxQueueTime = maxQueueTime
    this.#shed = shed
    // One listener function for every response: the hot path allocates no closure. Its
    // `this` is the response, so the backlog is reached through an alias.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this
    this.#onClose = function (this: ServerResponse) { if (self.#running.delete(this)) self.#finished() }
  }

  /** Renders running. */
  get running (): number { return this.#running.size }
  /** Renders waiting to start. */
  get queued (): number { return this.#queue.length - this.#head }
  /** Event-loop ms one render costs, as last estimated (0 before the first sample). */
  get cost (): number { return this.#cost }

  /** Estimated loop time, in ms, of the work ahead of a render that arrives now. */
  ahead (): number {
    const cost = this.#cost
    return this.queued * cost + Math.min(this.#running.size * cost, Math.max(RUN_AHEAD + cost, MIN_RUNNING * cost))
  }

  /**
   * Starts the render (calls `start`) now or when its turn comes; returns 'backlog' instead,
   * without starting it, when the work ahead passes the bound.
   */
  admit (reply: FastifyReply, start: Start, arrived: number, now: number): 'backlog' | undefined {
    this.#arrived(now)
    const running = this.#running.size
    if (running === 0 && this.queued === 0) { this.#start(reply, start, now); return undefined }
    const load = this.#load(now)
    if (this.queued > 0) {
      const keepingUp = this.#sustained(now) <= KEEPING_UP
      const overloaded = load > OVERLOAD_LOAD && (load > SINGLE_LOAD || !keepingUp)
      const bound = overloaded ? this.#overloadBacklog : this.#maxBacklog
      const ahead = this.ahead()
      if (ahead > bound && (overloaded || !this.#catchingUp(ahead, now, keepingUp))) {
        this.#lastShedAt = now
        if (overloaded) {
          this.#trim(bound, now)
          if (this.#displace(now)) { this.#queue.push({ reply, start, arrived }); this.#poll(); return undefined }
        }
        return 'backlog'
      }
    }
    if (this.queued === 0 && this.#room(running, load)) { this.#start(reply, start, now); return undefined }
    this.#queue.push({ reply, start, arrived })
    this.#poll()
    return undefined
  }

  /** Counts a render arrival in the current window, opening a new one when it is full. */
  #arrived (now: number): void {
    if (now - this.#lastArrival >= QUIET) this.#activeSince = now
    this.#lastArrival = now
    const id = Math.floor(now / RATE_WINDOW)
    const slot = id % SLOTS
    if (this.#slotIds[slot] !== id) { this.#slotIds[slot] = id; this.#slotCounts[slot] = 0 }
    this.#slotCounts[slot]!++
    const span = now - this.#windowStart
    if (span >= RATE_WINDOW) {
      // A window that ran on for QUIET ms held a quiet stretch: its count says nothing of the
      // rate now, and would hide the onset of overload for a whole window.
      const recent = span < QUIET
      this.#before = recent ? this.#arrivals : 0
      this.#beforeSpan = recent ? span : 0
      this.#arrivals = 0
      this.#windowStart = now
    }
    this.#arrivals++
  }

  /**
   * While the worker sheds (within OVERLOAD_HOLD) and its arrivals span enough time to judge:
   * the loop time the renders that arrived in the last two windows ask for, as a share of the
   * time that passed; 0 otherwise, and always with overloadBacklog 0. Past OVERLOAD_LOAD the
   * queue is bound by overloadBacklog instead of maxBacklog; past SINGLE_LOAD one render runs
   * at a time.
   */
  #load (now: number): number {
    if (this.#overloadBacklog === 0 || now - this.#lastShedAt >= OVERLOAD_HOLD) return 0
    const demand = this.#demand(now)
    return Number.isNaN(demand) ? 0 : demand
  }

  /**
   * Whether a worker whose queue passed maxBacklog will work it off by itself: the renders
   * arriving ask for at most CATCH_UP_LOAD of its loop time (the queue grew in a stall, a
   * garbage collection or a core busy with another thread, or from a few arrivals close
   * together) and the work ahead is within CATCH_UP_BACKLOG x maxBacklog; or, when it
   * `keepsUp` over time, they ask for at most SINGLE_LOAD and the work ahead is within
   * KEPT_UP_BACKLOG x maxBacklog.
   */
  #catchingUp (ahead: number, now: number, keepsUp: boolean): boolean {
    const demand = this.#demand(now)
    return keepsUp
      ? ahead <= KEPT_UP_BACKLOG * this.#maxBacklog && demand <= SINGLE_LOAD
      : ahead <= CATCH_UP_BACKLOG * this.#maxBacklog && demand <= CATCH_UP_LOAD
  }

  /**
   * The loop time the renders that arrived in the last SUSTAINED_WINDOW ms ask for, as a share
   * of that time; NaN until they have arrived that long without a quiet stretch (after one, the
   * count would mix the calm with the load now).
   */
  #sustained (now: number): number {
    if (now - this.#activeSince < SUSTAINED_WINDOW) return Number.NaN
    const id = Math.floor(now / RATE_WINDOW)
    let n = 0
    for (let i = 0; i < SLOTS; i++) if (this.#slotIds[i]! > id - SLOTS) n += this.#slotCounts[i]!
    return n * this.#cost / (now - (id - SLOTS + 1) * RATE_WINDOW)
  }

  /**
   * The loop time the renders that arrived in the last two windows ask for, as a share of the
   * time that passed; NaN while they span too little time to judge.
   */
  #demand (now: number): number {
    const span = this.#beforeSpan + now - this.#windowStart
    if (span < Math.max(MIN_SPAN, MIN_SPAN_RENDERS * this.#cost)) return Number.NaN
    return (this.#before + this.#arrivals) * this.#cost / span
  }

  /**
   * Sheds the newest queued renders that the bound would not have let in (the queue grew
   * under the full bound before the overload showed): they would be served late, so they are
   * answered now, while they have waited less than TRIM_AGE. The oldest one stays.
   */
  #trim (bound: number, now: number): void {
    while (this.queued > 1 && this.ahead() - this.#cost > bound) {
      const w = this.#queue.at(-1)!
      if (now - w.arrived > TRIM_AGE) break
      this.#queue.pop()
      if (!w.reply.raw.destroyed) this.#shed(w.reply, 'overload')
    }
  }

  /**
   * Past capacity, a render that arrives in a full queue takes the place of the oldest one
   * waiting, if that one has waited at most TRIM_AGE: it is shed now, while its 503 is fast,
   * and the render that starts next is the fresher one. Returns whether a place was freed.
   */
  #displace (now: number): boolean {
    const w = this.#queue[this.#head]
    if (w === undefined) return false
    const gone = w.reply.raw.destroyed || w.reply.request.raw.socket?.destroyed !== false
    if (!gone && now - w.arrived > TRIM_AGE) return false
    this.#queue[this.#head++] = undefined as unknown as Waiting
    if (!gone) this.#shed(w.reply, 'overload')
    return true
  }

  /** Whether another render may run next to `running` ones, at this load, without the loop having idled. */
  #room (running: number, load: number): boolean {
    // Far past capacity, one at a time unless they are very cheap: overlapping renders only
    // slow each other.
    if (load > SINGLE_LOAD) return running === 0 || running * this.#cost < SINGLE_RUN_AHEAD
    return running < MIN_RUNNING || running * this.#cost < RUN_AHEAD
  }

  #start (reply: FastifyReply, start: Start, now: number): void {
    const res = reply.raw
    if (this.#running.size === 0) this.#busyElu = performance.eventLoopUtilization()
    this.#running.set(res, now)
    res.once('close', this.#onClose)
    start()
  }

  #finished (): void {
    this.#completed++
    const now = performance.now()
    if (this.#running.size === 0) this.#account(now)
    else if (now - this.#sampleStart >= SAMPLE_MS || this.#completed >= SAMPLE_RENDERS) this.#account(now)
    this.#next(now, false)
  }

  /** Adds the loop time since the last look to the sample; closes the sample when it is full. */
  #account (now: number): void {
    const elu = performance.eventLoopUtilization()
    if (this.#busyElu) this.#busy += performance.eventLoopUtilization(elu, this.#busyElu).active
    this.#busyElu = this.#running.size > 0 ? elu : undefined
    if (this.#completed >= SAMPLE_RENDERS || (this.#samples > 0 && this.#completed > 0 && now - this.#sampleStart >= SAMPLE_MS)) {
      const sample = this.#busy / this.#completed
      if (this.#samples++ === 0) { /* warm-up */ } else this.#cost = this.#cost === 0 ? sample : this.#cost + NEW_WEIGHT * (sample - this.#cost)
      this.#busy = 0
      this.#completed = 0
      this.#sampleStart = now
    }
    // Start order is map order: the long-lived ones are at the front.
    for (const [res, startedAt] of this.#running) {
      if (now - startedAt < LONG_LIVED) break
      this.#running.delete(res)
    }
  }

  /** Starts queued renders while there is room; `idle`: the loop idled since the last poll. */
  #next (now: number, idle: boolean): void {
    const load = this.#load(now)
    while (this.#head < this.#queue.length) {
      const running = this.#running.size
      if (!idle && !this.#room(running, load)) break
      const w = this.#queue[this.#head]!
      this.#queue[this.#head++] = undefined as unknown as Waiting
      if (w.reply.raw.destroyed || w.reply.request.raw.socket?.destroyed !== false) continue
      if (this.#maxQueueTime > 0 && now - w.arrived > this.#maxQueueTime) { this.#shed(w.reply, 'queueTime'); continue }
      this.#start(w.reply, w.start, now)
      idle = false
    }
    if (this.#head === this.#queue.length) { this.#queue = []; this.#head = 0 } else if (this.#head > 1024) {
      this.#queue = this.#queue.slice(this.#head)
      this.#head = 0
    }
  }

  /** While renders wait, look every few ms whether the loop has spare time for one more. */
  #poll (): void {
    if (this.#timer) return
    this.#pollElu = performance.eventLoopUtilization()
    this.#timer = setTimeout(this.#tick, POLL)
  }

  readonly #tick = (): void => {
    this.#timer = undefined
    const elu = performance.eventLoopUtilization()
    const d = performance.eventLoopUtilization(elu, this.#pollElu)
    const now = performance.now()
    if (now - this.#sampleStart >= SAMPLE_MS && this.#running.size > 0) this.#account(now)
    this.#next(now, d.idle >= IDLE_TO_START * (d.idle + d.active))
    if (this.queued > 0) this.#poll()
  }
}
