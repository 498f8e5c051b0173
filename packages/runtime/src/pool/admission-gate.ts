// The render pool's admission, answered and reported like a worker's: the admission
// controller (../admission/controller.ts) decides from the pool's exact queue; a refused
// render is answered through the load-shedding plugin's shed reporter when one covers the
// route (pool/presence.ts: 503, its headers, its counters by reason, its retry hold), and the
// controller's state goes to that plugin (the worker's status block under `spindle start`).
// Without the plugin (a server of your own), a refused render gets the coded error
// SPINDLE_RUNTIME_POOL_OVERLOADED's JSON with the same headers, sent as is (not thrown
// through the app's error handler).
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AdmissionController, WARM_RENDERS, type AdmissionState, type AdmissionVerdict } from '../admission/controller.ts'
import { firstOnConnection, isPaced, isRetry, markShed, type ShedSocket } from '../admission/retry.ts'
import { kStartedAt, type Stamped } from '../admission/stamps.ts'
import { SPINDLE_RUNTIME_POOL_OVERLOADED } from '../errors.ts'
import { poolShedReporter, type PoolShedReason, type PoolShedReporter } from './presence.ts'

/**
 * The body of a refusal by verdict: the coded error as Fastify's error handler writes it,
 * built once. Sending the error itself made an Error (with its stack trace) per 503 and took
 * it through Fastify's error path: under a closed loop of 100 connections on the React
 * Router example with `threads: 2`, the error's construction alone was 4.5 % of the Fastify
 * thread's busy time (`node bench/profile.mjs --workload react-router --config adapter-pool
 * --workers 2 --connections 100 --thread main`), and a logger would have written every one
 * at error level.
 */
const REFUSALS: Record<PoolShedReason, string> = { backlog: refusal('backlog'), overload: refusal('overload') }

function refusal (reason: PoolShedReason): string {
  const error = new SPINDLE_RUNTIME_POOL_OVERLOADED(reason)
  return JSON.stringify({ statusCode: 503, code: error.code, error: 'Service Unavailable', message: error.message })
}

export class AdmissionGate {
  readonly #controller: AdmissionController
  readonly #queued: () => number
  /** ms between re-judgements while the state is not 'normal' and no event comes. */
  readonly #settleMs: number
  #reporter: PoolShedReporter | undefined
  #reported: AdmissionState = 'normal'
  #timer: NodeJS.Timeout | undefined

  /** `budget`: maxBacklog in ms; `queued`: the pool's queue length now; `slots`: renders the pool runs at once. */
  constructor (budget: number, queued: () => number, slots: number) {
    // Every slot starts cold at once: WARM_RENDERS a slot before the drain is measured (controller.ts, warmRenders).
    this.#controller = new AdmissionController({ budget, target: Math.min(10, budget / 2), warmRenders: WARM_RENDERS * slots })
    this.#queued = queued
    this.#settleMs = Math.max(10, budget / 4)
  }

  /** A render arrives at the pool; see AdmissionController.arrive. */
  arrive (request: FastifyRequest, now: number, queued: number, busy: number, capacity: number): AdmissionVerdict {
    this.#reporter = poolShedReporter(request.server) ?? this.#reporter
    const socket = request.raw.socket as ShedSocket | null
    this.#controller.restarting = this.#reporter?.restarting() ?? false
    const verdict = this.#controller.arrive(now, queued, busy, capacity, firstOnConnection(socket), isRetry(socket, now), isPaced(socket, now))
    this.#note()
    return verdict
  }

  /** How many of the oldest queued renders to cut now (see AdmissionController.excess); each is refused with refuse(…, 'overload'). */
  excess (queued: number, now: number): number {
    const cut = this.#controller.excess(queued)
    for (let i = 0; i < cut; i++) this.#controller.rejected(now)
    return cut
  }

  started (now: number, queueDelayMs: number, request: FastifyRequest): void {
    // The request metrics' queue delay then covers the wait for a pool slot.
    (request.raw as Stamped)[kStartedAt] = now
    this.#controller.started(now, queueDelayMs)
  }

  /** A render ended after `serviceMs`, with `queued` renders waiting. */
  finished (now: number, serviceMs: number, queued: number): void {
    this.#controller.finished(now, serviceMs, queued)
  }

  /** Judges the state from the clock and reports a change (the queue emptied, or a quiet spell). */
  settle (): void {
    this.#controller.stateNow(this.#queued())
    this.#note()
  }

  /** Answers a render the pool will not run: shed through the plugin, else the coded error. */
  refuse (request: FastifyRequest, reply: FastifyReply, reason: PoolShedReason): void {
    // Its handler ran, but no render: the request metrics must not count it as one.
    (request.raw as Stamped)[kStartedAt] = undefined
    const reporter = poolShedReporter(request.server)
    if (reporter) {
      reporter.shed(reply, reason, this.#controller.storm)
      return
    }
    reply.code(503).header('retry-after', '1').header('cache-control', 'no-store').header('x-spindle-shed', reason)
      .type('application/json; charset=utf-8').send(REFUSALS[reason])
    // Seen by the controller: a client that asks again at once is a retry storm.
    markShed(request.raw.socket as ShedSocket | null, performance.now())
  }

  close (): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#reported !== 'normal') this.#reporter?.state('normal')
  }

  #note (): void {
    const state = this.#controller.state
    if (state !== this.#reported) {
      this.#reported = state
      this.#reporter?.state(state)
    }
    // The controller judges only on events: once the load stops, a timer brings it back to normal.
    if (state !== 'normal' && this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined
        this.settle()
      }, this.#settleMs)
      this.#timer.unref()
    }
  }
}
