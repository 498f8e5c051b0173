// The main thread's render pool: piscina threads that each hold a framework handler, fed
// one task per request. This file owns the pool's life (start, readiness, replacement of
// lost threads, close) and dispatch: admission from the exact queue, then join-shortest-queue
// through piscina's least-busy balancer with `concurrency` renders per thread. piscina's own
// queue stays empty: a task is run only when a slot is free, so a request that cannot start
// in time is answered 503 here without reaching a thread.
//
// A slot is a share of a thread's CPU, so two kinds of request stop holding one, as in a
// worker's render queue (../admission/render-queue.ts): one that has run for LONG_LIVED ms
// (an event stream, a slow download: it no longer counts), and, while requests wait and
// every slot is taken, the threads idle (the running requests wait for I/O, a loader's fetch
// or an open stream, not for the CPU): then the slots grow, one a poll, and shrink back as
// the threads turn busy (../admission/render-limit.ts).
import { performance, type EventLoopUtilization } from 'node:perf_hooks'
import { isMainThread, resourceLimits, workerData, type Worker } from 'node:worker_threads'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import { Piscina } from 'piscina'
import { SPINDLE_RUNTIME_POOL_START_FAILED, SPINDLE_RUNTIME_POOL_UNAVAILABLE } from '../errors.ts'
import { AdmissionGate } from './admission-gate.ts'
import { markAnswered, type ShedSocket } from '../admission/retry.ts'
import { forward } from './forward.ts'
import { reportPoolEvent } from './pool-report.ts'
import { HangWatch } from './hang-watch.ts'
import { countRenderPool } from './presence.ts'
import { BEAT_INTERVAL, isThreadReady, type PoolThreadData, type RequestHead } from './protocol.ts'
import { LONG_LIVED } from '../admission/controller.ts'
import { RenderLimit } from '../admission/render-limit.ts'
import { defaultYoungGenerationMb, workerYoungGenerationMb } from '../v8-young.ts'

/** ms between judgements of the render limit on the threads' idle time while requests wait and every slot is taken. */
const POLL = 10
/**
 * piscina's cap on one thread's tasks: only a backstop, the slots above decide. Requests
 * started on idle time, and long-lived ones, run beyond `concurrency`.
 */
const TASKS_PER_THREAD_CAP = 1024
/**
 * ms a thread's loop may go without turning before new requests go to another thread: five
 * missed beats. A thread stuck in a loop is ended only after hangTimeout (10 s by default);
 * until then, requests sent to it would wait that long for a 502. A thread merely busy with
 * one long synchronous render is passed over too, which is where a new request should not
 * go anyway.
 */
const QUIET_MS = 5 * BEAT_INTERVAL
/** ms before a fresh pool is started in place of one short of threads, doubled after each failed start up to REFILL_MAX. */
const REFILL_FIRST = 1000
const REFILL_MAX = 30_000

/** A request running on a pool thread; `counted` until it has run LONG_LIVED ms. */
interface Running { readonly startedAt: number, counted: boolean }

export interface RenderPoolOptions {
  /** The framework's pool-thread entry module (absolute path). */
  filename: string
  /** Pool threads (positive integer). */
  threads: number
  /** Renders one thread runs at once. */
  concurrency: number
  /** Cloneable options for the thread entry (threadOptions() there). */
  options: Record<string, unknown>
  /** Resources for the threads' workerData.shared (e.g. the shared cache's SharedArrayBuffer). */
  shared: Record<string, unknown>
  /** ms a request may wait for a slot (the admission budget). */
  maxBacklog: number
  /** ms a thread's event loop may go without turning (its heartbeat stopped) before it is ended and replaced; 0 = never. */
  hangTimeout: number
  /** ms the threads have to load the framework. */
  startTimeout: number
  log: FastifyBaseLogger
}

interface Waiting {
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  readonly start: () => void
  /** Resolves dispatch() for a request that leaves the queue without running. */
  readonly leave: () => void
  readonly arrived: number
  cancelled: boolean
}

/** What a render pool holds at a moment: its threads, its slots and what fills them. */
export interface RenderPoolStats {
  readonly threads: number
  /** Requests at once the pool runs while its threads are busy (`threads × threadConcurrency`). */
  readonly capacity: number
  /** Requests running that hold a slot. */
  readonly busy: number
  /** Requests waiting for a slot. */
  readonly queued: number
}

/** The pools running in this thread, for renderPoolStats(). */
const live = new Set<RenderPool>()

/**
 * The figures of every render pool running in this thread (one per adapter registered with
 * `threads`), for an app's own health route or metrics. An idle pool reads busy 0 and queued 0.
 */
export function renderPoolStats (): RenderPoolStats[] {
  return [...live].map((pool) => ({ threads: pool.threads, capacity: pool.capacity, busy: pool.busy, queued: pool.queued }))
}

export class RenderPool {
  readonly #o: RenderPoolOptions
  /** undefined: every request waits for its slot, however long. */
  readonly #admission: AdmissionGate | undefined
  readonly #capacity: number
  /** How far beyond `#capacity` requests run while the threads idle (renders that wait for I/O). */
  readonly #limit = new RenderLimit()
  #pool: Piscina
  /** Running requests that hold a slot. */
  #busy = 0
  /** Every running request, in start order. */
  readonly #running = new Set<Running>()
  #queue: Waiting[] = []
  #closing = false
  /**
   * Threads the hang watch ended whose exit piscina has not reported yet: their loss is
   * reported as `hung` already, not again as a crash. A count, not their ids: piscina reports
   * an exit after the thread has ended, when its threadId reads -1.
   */
  #ended = 0
  readonly #hangs: HangWatch | undefined
  #timer: NodeJS.Timeout | undefined
  /** Each thread's event-loop utilization when the current poll began. */
  #pollElu = new Map<Worker, EventLoopUtilization>()
  /** A fresh pool is being started in place of this one (#refill). */
  #refilling = false

  private constructor (o: RenderPoolOptions, pool: Piscina, hangs: HangWatch | undefined) {
    this.#o = o
    this.#pool = pool
    this.#capacity = o.threads * o.concurrency
    this.#admission = runtimeSheddingOff() ? undefined : new AdmissionGate(o.maxBacklog, () => this.#queue.length, this.#capacity)
    this.#watch(pool)
    this.#hangs = hangs
    hangs?.start((threadId) => {
      const thread = this.#pool.threads.find((t) => t.threadId === threadId)
      if (!thread) return
      reportPoolEvent(o.log, 'error', `render pool thread stuck for ${o.hangTimeout} ms: ending it; its requests fail with 502`, { threadId, lost: 'hung' })
      this.#ended++
      void thread.terminate()
    })
  }

  /** Starts the threads and resolves when every one has loaded its framework. */
  static async start (o: RenderPoolOptions): Promise<RenderPool> {
    // Watches each thread from its ready signal on, a replacement's too.
    const hangs = o.hangTimeout > 0 ? new HangWatch(o.hangTimeout) : undefined
    const pool = await startPiscina(o, hangs)
    countRenderPool(o.threads)
    const renderPool = new RenderPool(o, pool, hangs)
    live.add(renderPool)
    return renderPool
  }

  get threads (): number { return this.#pool.threads.length }
  /** Requests running on pool threads. */
  get busy (): number { return this.#busy }
  /** Requests waiting for a free slot. */
  get queued (): number { return this.#queue.length }
  get capacity (): number { return this.#capacity }

  /** Sends one request to the pool; resolves once the reply is handed to Fastify. */
  async dispatch (request: FastifyRequest, reply: FastifyReply, head: RequestHead): Promise<void> {
    const now = performance.now()
    const gate = this.#admission
    if (gate) {
      const verdict = gate.arrive(request, now, this.#queue.length, this.#busy, this.#slots(now))
      // Overloaded: the renders queued beyond the tight bound are answered now, oldest first.
      for (let cut = gate.excess(this.#queue.length, now); cut > 0; cut--) {
        const waiting = this.#queue.shift()!
        waiting.cancelled = true
        if (!waiting.reply.raw.destroyed) gate.refuse(waiting.request, waiting.reply, 'overload')
        waiting.leave()
      }
      if (verdict !== 'admit') {
        // A client already gone is not counted as shed: it got no 503.
        if (!reply.raw.destroyed) gate.refuse(request, reply, verdict)
        return
      }
    }
    if (this.#busy < this.#slots(now) && this.#queue.length === 0) return this.#run(request, reply, head, now, now)
    return new Promise<void>((resolve) => {
      const waiting: Waiting = {
        request,
        reply,
        arrived: now,
        cancelled: false,
        leave: resolve,
        start: () => { this.#run(request, reply, head, waiting.arrived, performance.now()).then(resolve, resolve) },
      }
      this.#queue.push(waiting)
      this.#poll()
      reply.raw.once('close', () => {
        if (!waiting.cancelled && this.#queue.includes(waiting)) {
          waiting.cancelled = true
          this.#queue = this.#queue.filter((w) => w !== waiting)
          resolve()
        }
      })
    })
  }

  async #run (request: FastifyRequest, reply: FastifyReply, head: RequestHead, arrived: number, now: number): Promise<void> {
    if (this.#pool.threads.length === 0) {
      // Every thread failed to load and piscina starts none: piscina would hold the task
      // until a fresh pool replaces it (#refill), and the client with it.
      reply.code(503).header('retry-after', '1').header('cache-control', 'no-store').send(new SPINDLE_RUNTIME_POOL_UNAVAILABLE())
      return
    }
    this.#busy++
    const running: Running = { startedAt: now, counted: true }
    this.#running.add(running)
    this.#admission?.started(now, now - arrived, request)
    const { replied, settled } = forward(this.#pool, request, reply, head, (err, headSent) => {
      reportPoolEvent(request.log, 'error', headSent ? 'render pool thread failed mid-response: connection cut' : 'render pool thread failed: answered 502', { err })
    })
    const done = (): void => {
      this.#running.delete(running)
      const end = performance.now()
      markAnswered(request.raw.socket as ShedSocket | null, end)
      if (running.counted) {
        this.#busy--
        this.#admission?.finished(end, end - now, this.#queue.length)
      }
      this.#next()
      if (this.#queue.length === 0) this.#admission?.settle()
    }
    // The slot comes back however the task ended.
    settled.then(done, done)
    return replied
  }

  /** Requests that may run at once now: the slots, more while the threads idle (render-limit.ts). */
  #slots (now: number): number {
    return this.#limit.value(this.#capacity, now)
  }

  #next (): void {
    const slots = this.#slots(performance.now())
    while (this.#busy < slots && this.#queue.length > 0) this.#startOldest()
    if (this.#queue.length > 0) this.#poll()
  }

  #startOldest (): void {
    const waiting = this.#queue.shift()!
    if (!waiting.cancelled) waiting.start()
  }

  #poll (): void {
    if (this.#timer !== undefined || this.#closing) return
    this.#pollElu = new Map(this.#pool.threads.map((t) => [t, t.performance.eventLoopUtilization()]))
    this.#timer = setTimeout(this.#tick, POLL)
  }

  readonly #tick = (): void => {
    this.#timer = undefined
    const now = performance.now()
    // Start order is set order: the long-lived are at the front.
    for (const running of this.#running) {
      if (now - running.startedAt < LONG_LIVED) break
      if (!running.counted) continue
      running.counted = false
      this.#busy--
      this.#admission?.finished(now, Infinity, this.#queue.length)
    }
    let idle = 0
    let span = 0
    for (const thread of this.#pool.threads) {
      const before = this.#pollElu.get(thread)
      if (before === undefined) continue
      const d = thread.performance.eventLoopUtilization(thread.performance.eventLoopUtilization(), before)
      idle += d.idle
      span += d.idle + d.active
    }
    while (this.#queue.length > 0 && this.#queue[0]!.cancelled) this.#queue.shift()
    if (this.#queue.length > 0) this.#limit.judge(span > 0 ? idle / span : NaN, this.#busy, this.#capacity, now)
    this.#next()
  }

  // piscina replaces a thread that dies after start-up, but never again once one died
  // before it was ready (workerFailsDuringBootstrap): then the whole pool is rebuilt.
  #watch (pool: Piscina): void {
    // piscina emits 'error' only for a thread that failed with no task on it (one that fails
    // mid-task fails its tasks instead); every lost thread is counted at its 'workerDestroy'.
    pool.on('error', (err: Error) => { reportPoolEvent(this.#o.log, 'error', 'render pool thread failed', { err }) })
    pool.on('workerDestroy', () => {
      // A thread of the pool in service that the hang watch did not end: it threw or exited.
      // (Threads of a pool that is closing or was replaced end as they should.)
      if (!this.#closing && this.#pool === pool) {
        if (this.#ended > 0) this.#ended--
        else reportPoolEvent(this.#o.log, 'error', 'render pool thread exited: replacing it', { lost: 'crashed' })
      }
      // piscina starts the replacement right after this event, unless a thread failed while
      // loading. With no thread left and none to come, the tasks piscina queued (requests
      // sent while the replacement loaded) would wait for ever: closing the pool fails them
      // (502), and requests from then on get 503 until a fresh pool serves.
      setImmediate(() => {
        if (this.#closing || this.#pool !== pool || pool.threads.length > 0) return
        pool.close({ force: true }).catch(() => {})
      })
      setTimeout(() => { this.#refill(pool, REFILL_FIRST) }, REFILL_FIRST).unref()
    })
  }

  /**
   * Starts a fresh pool in place of `pool` if it is still short of threads. A start that
   * fails (the app cannot load now) is tried again after `wait` ms, twice as long each time
   * up to REFILL_MAX; meanwhile the threads left serve, or, with none, requests get 503.
   */
  #refill (pool: Piscina, wait: number): void {
    if (this.#closing || this.#refilling || this.#pool !== pool || pool.threads.length >= this.#o.threads) return
    this.#refilling = true
    reportPoolEvent(this.#o.log, 'warn', `render pool has ${pool.threads.length} of ${this.#o.threads} threads: starting a new pool`)
    startPiscina(this.#o, this.#hangs).then((fresh) => {
      this.#refilling = false
      if (this.#closing) { void fresh.close({ force: true }); return }
      this.#pool = fresh
      this.#watch(fresh)
      pool.close().catch(() => {})
    }, (err: unknown) => {
      this.#refilling = false
      const next = Math.min(wait * 2, REFILL_MAX)
      reportPoolEvent(this.#o.log, 'error', `render pool could not be restarted: trying again in ${wait} ms`, { err, retryInMs: wait })
      setTimeout(() => { this.#refill(pool, next) }, wait).unref()
    })
  }

  /** Stops taking requests, lets running ones end (up to `timeout` ms), then ends the threads. */
  async close (timeout = 10_000): Promise<void> {
    if (this.#closing) return
    this.#closing = true
    live.delete(this)
    countRenderPool(-this.#o.threads)
    this.#hangs?.stop()
    clearTimeout(this.#timer)
    this.#admission?.close()
    for (const waiting of this.#queue) waiting.cancelled = true
    this.#queue = []
    const pool = this.#pool
    const timer = setTimeout(() => { void pool.close({ force: true }) }, timeout)
    timer.unref()
    await pool.close().catch(() => {})
    clearTimeout(timer)
  }
}

/**
 * A runtime worker started with `shedding: false` (`--no-shedding`: closed-loop capacity
 * tests, where a shed client asks again at once) sheds nothing, and neither does its pool.
 */
function runtimeSheddingOff (): boolean {
  if (isMainThread) return false
  const data = workerData as { kind?: unknown, shedding?: unknown } | null
  return data?.kind === 'spindle-worker' && data.shedding === false
}

/**
 * Inside a runtime worker, pool threads get its young-generation size (`youngGenerationMb`,
 * 96 MB by default); in a server's main thread (the adapters' `threads` option), the same
 * default, or V8's own where that is smaller. Left to V8 a thread gets up to 192 MB, whose
 * minor collections stop a render for 45-60 ms and hold more memory
 * (docs/overload.md#garbage-collection-pauses).
 */
async function youngGeneration (): Promise<{ resourceLimits?: { maxYoungGenerationSizeMb: number } }> {
  const young = isMainThread
    ? defaultYoungGenerationMb(await workerYoungGenerationMb())
    : resourceLimits.maxYoungGenerationSizeMb ?? 0
  return young > 0 ? { resourceLimits: { maxYoungGenerationSizeMb: young } } : {}
}

/** Starts the threads and resolves when every one has loaded its framework; each ready signal, later ones too, goes to `hangs`. */
async function startPiscina (o: RenderPoolOptions, hangs: HangWatch | undefined): Promise<Piscina> {
  const workerData: PoolThreadData = { kind: 'spindle-pool-thread', shared: o.shared, options: o.options }
  // atomics 'disabled': in piscina's default mode an idle thread blocks in Atomics.wait and
  // its event loop freezes, so chunks a render streams after an await never leave.
  // minThreads = maxThreads and no idle timeout: a framework takes seconds to load.
  const pool = new Piscina({
    filename: o.filename,
    minThreads: o.threads,
    maxThreads: o.threads,
    idleTimeout: Infinity,
    concurrentTasksPerWorker: Math.max(o.concurrency, TASKS_PER_THREAD_CAP),
    ...(hangs ? { loadBalancer: leastBusyTurning(hangs, Math.max(o.concurrency, TASKS_PER_THREAD_CAP)) } : {}),
    atomics: 'disabled',
    workerData,
    ...await youngGeneration(),
  })
  if (hangs) pool.on('message', (message: unknown) => { if (isThreadReady(message)) hangs.track(message) })
  // From creation on, piscina's 'error' always has a listener: a second thread failing after
  // the first settled the start below would otherwise be thrown as an uncaught exception.
  // The pool's own listener (#watch) logs what comes after start-up.
  pool.on('error', () => {})
  let ready = 0
  try {
    await new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => {
        clearTimeout(timer)
        pool.off('message', onMessage)
        pool.off('error', settle)
        if (err) reject(err)
        else resolve()
      }
      const timer = setTimeout(() => { settle(new Error(`${o.threads - ready} of ${o.threads} threads not ready after ${o.startTimeout} ms`)) }, o.startTimeout)
      const onMessage = (message: unknown) => { if (isThreadReady(message) && ++ready === o.threads) settle() }
      pool.on('message', onMessage)
      pool.on('error', settle)
    })
  } catch (err) {
    await pool.close({ force: true }).catch(() => {})
    throw new SPINDLE_RUNTIME_POOL_START_FAILED((err as Error).message, { cause: err })
  }
  return pool
}

type Balancer = NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']

/**
 * piscina's least-busy choice (a thread with nothing to do, else the one with the fewest
 * tasks under `maximumUsage`), among the threads whose loop turned within QUIET_MS; only
 * when none has, among all. Written here rather than wrapped: piscina does not export its
 * balancer, and the choice must skip threads it cannot see are stuck.
 */
function leastBusyTurning (hangs: HangWatch, maximumUsage: number): Balancer {
  return (_task, workers) => {
    const now = Date.now()
    const pick = (turning: boolean): typeof workers[number] | null => {
      let candidate: typeof workers[number] | null = null
      let checkpoint = maximumUsage
      for (const worker of workers) {
        if (turning && hangs.quietFor(worker.id, now) >= QUIET_MS) continue
        if (worker.currentUsage === 0) return worker
        if (worker.currentUsage < checkpoint) {
          candidate = worker
          checkpoint = worker.currentUsage
        }
      }
      return candidate
    }
    return pick(true) ?? pick(false)
  }
}
