// A worker's renders in turn: runs a few at once, keeps the rest in a first-in-first-out
// queue, and asks the admission controller (controller.ts) whether an arriving render may
// wait. This file owns the event loop's side: replies, sockets, timers and the loop's idle
// time; the decisions are the controller's.
//
// How many run at once: at least two (a render that yields between its stages, or waits for
// its client to read a large response, leaves gaps the second one fills), at least one while
// the controller sheds (outside a retry storm: a page served then takes one render's time,
// not two side by side, and one waits so the loop never idles between them), and more while
// the event loop idles with renders waiting (they wait for I/O, not for the CPU; the limit
// is render-limit.ts's). A turn of the event loop starts two renders, more only for TURN_MS, and the
// rest at its end, so the loop polls (and accepts new connections) between them. An
// overload's queue is cut oldest first; each end reports the loop's busy time, from which
// the controller measures the thread's pace.
import type { FastifyReply } from 'fastify'
import type { ServerResponse } from 'node:http'
import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import { type AdmissionController, type AdmissionState, LONG_LIVED } from './controller.ts'
import { RenderLimit } from './render-limit.ts'
import { firstOnConnection, isPaced, isRetry, markAnswered, type ShedSocket } from './retry.ts'
import { kStartedAt, type Stamped } from './stamps.ts'

/**
 * The work clock of a worker's admission controller: its event loop's active time so far, in
 * ms (controller.ts measures the drain on it). Unlike the thread's CPU time (below) it is not
 * a system call, and it counts the spells the thread waits for a core while it works.
 */
export const loopActiveMs = (): number => performance.eventLoopUtilization().active

/** Renders that run at once without the loop having idled (the limit's floor outside shedding). */
const MIN_RUNNING = 2
/**
 * ms of renders one turn of the event loop may start beyond its first MIN_RUNNING before the
 * rest wait for the next turn (#turnHasRoom): short enough that new connections are accepted
 * (one per turn) within a few renders, long enough that routes answering in microseconds do
 * not pay a turn each. The first MIN_RUNNING start whatever they take, as they did before
 * turns were bounded: renders that wait for I/O (Next.js pages) start as before.
 */
const TURN_MS = 4
/** How often, in ms, a non-empty queue judges the render limit on the loop's idle time. */
const POLL = 2

/**
 * The thread's busy time so far, in ms: its CPU time (user and system) where Node.js reports
 * it per thread (22.15 and later), else its event loop's active time. CPU time leaves out
 * the spells the thread waits for a core that another thread holds (its sibling workers,
 * the load's own clients on a small machine), which the loop's active time counts: in the
 * overload benchmark the loop's active time read 17-19 ms per render at 0.8x of capacity,
 * against 11-14 ms at 3x.
 */
const threadBusyMs: () => number = typeof process.threadCpuUsage === 'function'
  ? () => { const u = process.threadCpuUsage(); return (u.user + u.system) / 1000 }
  : () => performance.eventLoopUtilization().active

/**
 * A render that ran (from its start to its response's close) for less than this many ms
 * ends without a reading of the thread's busy time: reading it is a system call, which on a
 * route that answers in microseconds (a small JSON reply) was a measurable share of the
 * request (one worker, hello-world, server and client pinned to a core each, 4 alternated
 * rounds: 56.4 k against 51.6 k req/s without request metrics, 51.5 k against 49.5 k with
 * them, within the machine's noise of a few per cent). The pace still spans every end
 * between two readings (controller.ts), so such renders count in it; a thread whose renders
 * are all this short is paced by the time between its ends instead.
 */
const READ_BUSY_FROM_MS = 1

/**
 * A route whose renders run (start to response closed) for less than this many ms on
 * average is cheap: its requests start at once, outside the queue and the controller, as
 * static files do. Shedding such a request saves about what its 503 costs, and the queue's
 * bookkeeping was a quarter of it: on hello-world with one worker the server spent 37-42 µs
 * of CPU per request with admission, 30-34 µs with the queue bypassed (docs/overload.md#limits).
 * Queued, it also waited behind the pages of the queue that took milliseconds each.
 */
const CHEAP_MS = 0.5
/** Renders of a route measured before it may count as cheap. */
const CHEAP_AFTER = 16
/** One in this many requests of a cheap route still goes through the queue, to measure it again. */
const MEASURE_EVERY = 32
/** Weight of the newest render in a route's moving average of its render time. */
const COST_WEIGHT = 0.2
/** How long a route's renders take, as the queue has measured them. */
interface RouteCost { ms: number, measured: number, skipped: number }
/** The route cost a running render is measured for. */
const kRouteCost = Symbol('spindle.routeCost')
type Measured = ServerResponse & { [kRouteCost]?: RouteCost }

type Start = () => void
interface Waiting { reply: FastifyReply, start: Start, arrived: number }
export type QueueShedReason = 'backlog' | 'overload' | 'queueTime'

export class RenderQueue {
  readonly #controller: AdmissionController
  readonly #maxQueueTime: number
  /** undefined: the queue never sheds (render-turns.ts): every render waits its turn. */
  readonly #shed: ((reply: FastifyReply, reason: QueueShedReason) => void) | undefined
  readonly #report: (state: AdmissionState) => void
  /** Running renders, in start order, with their start time. */
  readonly #running = new Map<ServerResponse, number>()
  readonly #limit = new RenderLimit()
  /** Each route's render time, by the route's own object (its Fastify config). */
  readonly #costs = new WeakMap<object, RouteCost>()
  #queue: Waiting[] = []
  #head = 0
  #timer: NodeJS.Timeout | undefined
  /** Re-judges the state while it is not normal and no event comes. */
  #settle: NodeJS.Timeout | undefined
  #pollElu: EventLoopUtilization | undefined
  /** When the first render of this turn of the event loop started, and how many did; the turn ends at #turnEnd. */
  #turnStartedAt = 0
  #turnStarts = 0
  #turnTimer: NodeJS.Immediate | undefined
  #reported: AdmissionState = 'normal'
  readonly #onClose: (this: ServerResponse) => void

  /**
   * `shed`: answers a render the queue refuses; without it the queue never refuses one (the
   * controller's verdicts and cuts are ignored, `maxQueueTime` too) and every render waits
   * its turn. `busyMs`: the thread's busy time so far in ms (the thread's CPU time where
   * Node.js has it); a test passes its own to see when it is read.
   */
  constructor (
    controller: AdmissionController, maxQueueTime: number, shed: ((reply: FastifyReply, reason: QueueShedReason) => void) | undefined,
    report: (state: AdmissionState) => void = () => {}, busyMs: () => number = threadBusyMs,
  ) {
    this.#controller = controller
    this.#maxQueueTime = maxQueueTime
    this.#shed = shed
    this.#report = report
    // One listener function for every response: the hot path allocates no closure. Its
    // `this` is the response, so the queue is reached through an alias.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this
    this.#onClose = function (this: ServerResponse) {
      const startedAt = self.#running.get(this)
      if (startedAt === undefined) return
      self.#running.delete(this)
      const now = performance.now()
      markAnswered(this.socket as ShedSocket | null, now)
      // The thread's CPU time costs a system call (0.36 us a render): read at every end but
      // those of renders shorter than READ_BUSY_FROM_MS. Reading it at most every 5 ms
      // instead smoothed the pace over more renders and lowered it early in a worker's life,
      // and the rolling-restart benchmark then shed 33-58 of 1,610 Next.js pages.
      const serviceMs = now - startedAt
      const cost = (this as Measured)[kRouteCost]
      if (cost !== undefined && serviceMs < LONG_LIVED) {
        cost.ms = cost.measured++ === 0 ? serviceMs : cost.ms + COST_WEIGHT * (serviceMs - cost.ms)
      }
      self.#controller.finished(now, serviceMs, self.queued, serviceMs < READ_BUSY_FROM_MS ? NaN : busyMs())
      self.#next(now)
    }
  }

  get running (): number { return this.#running.size }
  get queued (): number { return this.#queue.length - this.#head }
  /** Whether the controller sees clients retrying into their 503s. */
  get storm (): boolean { return this.#controller.storm }

  /** A render shed before it reached the queue (pressure, its wait): counted toward a retry storm. */
  rejected (reply: FastifyReply, now: number): void {
    this.#controller.rejected(now, isRetry(reply.raw.socket as ShedSocket | null, now))
    this.#controller.stateNow(this.queued)
    this.#noteState()
  }

  /**
   * Starts the render (calls `start`) now or when its turn comes; returns why it is shed
   * instead, without starting it. `route`: an object that stands for the request's route
   * (its Fastify config): a route whose renders are measured cheap (CHEAP_MS) starts at once.
   */
  admit (reply: FastifyReply, start: Start, arrived: number, now: number, route?: object): 'backlog' | 'overload' | undefined {
    let cost: RouteCost | undefined
    if (route !== undefined) {
      cost = this.#costs.get(route)
      if (cost === undefined) this.#costs.set(route, cost = { ms: 0, measured: 0, skipped: 0 })
      else if (cost.measured >= CHEAP_AFTER && cost.ms < CHEAP_MS && ++cost.skipped % MEASURE_EVERY !== 0) {
        (reply.request.raw as Stamped)[kStartedAt] = now
        start()
        return undefined
      }
    }
    const c = this.#controller
    const socket = reply.raw.socket as ShedSocket | null
    const verdict = c.arrive(now, this.queued, this.#running.size, this.#capacity(now), firstOnConnection(socket), isRetry(socket, now), isPaced(socket, now))
    this.#noteState()
    const shed = this.#shed
    if (shed) {
      // Overloaded: the renders queued beyond the tight bound are answered now, oldest first.
      for (let cut = c.excess(this.queued); cut > 0; cut--) {
        const w = this.#queue[this.#head]!
        this.#queue[this.#head++] = undefined as unknown as Waiting
        if (!w.reply.raw.destroyed) { c.rejected(now); shed(w.reply, 'overload') }
      }
      if (verdict !== 'admit') return verdict
    }
    // A client that left while the request went through the app's hooks (or waited in the
    // HTTP cache's coalescing): nothing to render for, and its response's 'close' has fired
    // already, so a render started now would count as running until it turned long-lived.
    if (reply.raw.destroyed) return undefined
    if (cost !== undefined) (reply.raw as Measured)[kRouteCost] = cost
    if (this.queued === 0 && this.#running.size < this.#capacity(now) && this.#turnHasRoom(now)) {
      this.#start(reply, start, arrived, now)
      return undefined
    }
    this.#queue.push({ reply, start, arrived })
    this.#poll()
    return undefined
  }

  /** The renders the floor of this state allows: one while shedding, else MIN_RUNNING. */
  #floor (): number {
    return this.#controller.oneAtATime ? 1 : MIN_RUNNING
  }

  /** How many renders may run at once now (render-limit.ts). */
  #capacity (now: number): number {
    return this.#limit.value(this.#floor(), now)
  }

  #noteState (): void {
    const state = this.#controller.state
    if (state !== this.#reported) { this.#reported = state; this.#report(state) }
    // The controller judges on events only: once the load stops, a timer brings the state
    // back to normal (and /status with it) without waiting for the next request.
    if (state !== 'normal' && this.#settle === undefined) {
      this.#settle = setTimeout(() => {
        this.#settle = undefined
        this.#controller.stateNow(this.queued)
        this.#noteState()
      }, Math.max(10, this.#controller.budget / 4))
      this.#settle.unref()
    }
  }

  #start (reply: FastifyReply, start: Start, arrived: number, now: number): void {
    const res = reply.raw
    this.#running.set(res, now)
    ;(reply.request.raw as Stamped)[kStartedAt] = now
    this.#controller.started(now, now - arrived)
    res.once('close', this.#onClose)
    if (this.#turnTimer === undefined) {
      this.#turnStartedAt = now
      this.#turnStarts = 0
      this.#turnTimer = setImmediate(this.#turnEnd)
    }
    this.#turnStarts++
    start()
  }

  /** Starts queued renders while there is room. */
  #next (now: number): void {
    const capacity = this.#capacity(now)
    while (this.#head < this.#queue.length) {
      if (this.#running.size >= capacity || !this.#turnHasRoom(performance.now())) break
      const w = this.#queue[this.#head]!
      this.#queue[this.#head++] = undefined as unknown as Waiting
      // An injected request (a worker's warm-up) has a mock socket without `destroyed`.
      if (w.reply.raw.destroyed || w.reply.request.raw.socket?.destroyed === true) continue
      if (this.#shed && this.#maxQueueTime > 0 && now - w.arrived > this.#maxQueueTime) {
        this.#controller.rejected(now)
        this.#shed(w.reply, 'queueTime')
        continue
      }
      this.#start(w.reply, w.start, w.arrived, now)
    }
    if (this.#head === this.#queue.length) { this.#queue = []; this.#head = 0 } else if (this.#head > 1024) {
      this.#queue = this.#queue.slice(this.#head)
      this.#head = 0
    }
    if (this.queued === 0) {
      this.#controller.stateNow(0)
      this.#noteState()
    }
  }

  /**
   * Whether another render may start in this turn of the event loop. Renders that run
   * without waiting for I/O (a React Router page) end inside the callback that started them,
   * so without a bound one turn ran every request its poll read, and the renders each end
   * started, back to back, while a queue lasted; libuv accepts one new connection per turn.
   * On the React Router example with one worker and a closed loop of 100 connections opened
   * at once, the last connections got their first answer 7 s later, and the p99 was 1.4 s
   * against a p50 of 0.15 s (docs/overload.md#new-connections). A turn now starts
   * MIN_RUNNING renders, and more only for TURN_MS; the rest start at its end (#turnEnd),
   * after which the loop polls again.
   */
  #turnHasRoom (now: number): boolean {
    return this.#turnTimer === undefined || this.#turnStarts < MIN_RUNNING || now - this.#turnStartedAt < TURN_MS
  }

  /** The end of a turn in which renders started (its check phase): the queue's oldest start now, in a new turn. */
  readonly #turnEnd = (): void => {
    this.#turnTimer = undefined
    this.#next(performance.now())
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
    // Start order is map order: streams that run on (SSE, slow downloads) are at the front
    // and stop counting as renders.
    for (const [res, startedAt] of this.#running) {
      if (now - startedAt < LONG_LIVED) break
      this.#running.delete(res)
      this.#controller.finished(now, Infinity)
    }
    this.#limit.judge(d.idle / (d.idle + d.active), this.#running.size, this.#floor(), now)
    this.#next(now)
    if (this.queued > 0) this.#poll()
  }
}
