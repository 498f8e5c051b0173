import { ADMISSION_STATES, type AdmissionState } from './admission/controller.ts'
import { EventEmitter, once } from 'node:events'
import type { EventLoopUtilization } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { Worker } from 'node:worker_threads'
import { SPINDLE_RUNTIME_START_TIMEOUT, SPINDLE_RUNTIME_WORKER_START_FAILED } from './errors.ts'
import { newBalanceState } from './balance.ts'
import type { ResolvedOptions } from './options.ts'
import { MAX_TIMER_MS } from './option-schema.ts'
import {
  PHASE_STARTING, STATUS_BYTES, STATUS_HEARTBEAT, STATUS_INFLIGHT, STATUS_PHASE, STATUS_PRESSURE, STATUS_REQUESTS, STATUS_SHED_FIRST,
  STATUS_ADMISSION, STATUS_HANDED_OFF, STATUS_HANDOFF, STATUS_RESTARTING, SHUTDOWN_IDLE_GRACE, METRICS_STALE_MS,
  deserializeError, type MetricSnapshot, type SupervisorMessage, type WorkerData, type WarmupReport, type WorkerMessage,
} from './protocol.ts'

const WORKER_ENTRY = new URL('./worker.js', import.meta.url)

/** One worker thread: spawned, watched through its status block, drained or terminated. */
export class ManagedWorker extends EventEmitter {
  /** Smoothed load for connection balance; a new worker starts from zero. */
  readonly balance = newBalanceState()
  readonly id: number
  readonly generation: number
  readonly thread: Worker
  readonly startedAt = Date.now()
  readonly #status: Int32Array
  #lastBeat = -1
  #lastBeatAt = Date.now()
  #eluPrev: EventLoopUtilization | undefined
  #elu = 0
  #heap: { used: number, limit: number } | undefined
  #heapPending = false
  #metricsRequests = 0
  /** The worker's latest request metrics (sent unasked or in answer) and when they came (performance.now()). */
  #latestMetrics: { metrics: MetricSnapshot[], at: number } | undefined
  readonly #maxOldMb: number | undefined
  #exited = false
  exitCode: number | undefined
  port: number | undefined
  /** Why the supervisor is taking this worker down (undefined while it serves). */
  retiring: string | undefined

  /** `handover`: listen only when told (listen()), once the worker it replaces has let go of the port. */
  constructor (id: number, generation: number, port: number, opts: ResolvedOptions, handover = false) {
    super()
    this.id = id
    this.generation = generation
    this.#maxOldMb = opts.maxHeapMb
    const status = new SharedArrayBuffer(STATUS_BYTES)
    this.#status = new Int32Array(status)
    Atomics.store(this.#status, STATUS_PHASE, PHASE_STARTING)
    const data: WorkerData = {
      kind: 'spindle-worker',
      id,
      generation,
      appPath: opts.appPath,
      appOptions: opts.appOptions,
      host: opts.host,
      port,
      reusePort: opts.mode === 'reusePort',
      handover,
      status,
      shared: opts.shared,
      shedding: opts.shedding,
      metrics: opts.metrics,
      // The first workers start with nobody serving yet: warming them would only delay that.
      warmup: generation > 1 ? opts.warmup : false,
    }
    // V8 switches, not resource limits: they are process-wide. A new isolate reads the memory
    // reducer's when its heap is set up, so it is set before each worker starts; every
    // isolate reads the scavenge one at each minor GC, so it is left alone unless turned off.
    setFlagsFromString(opts.memoryReducer ? '--memory-reducer' : '--no-memory-reducer')
    if (!opts.parallelScavenge) setFlagsFromString('--no-parallel-scavenge')
    this.thread = new Worker(WORKER_ENTRY, {
      workerData: data,
      name: `spindle-worker-${id}`,
      // Pool mode: the adapters read the size of their render pool from here when their own
      // `threads` option is absent. A value left in the supervisor's own environment does
      // not reach reusePort workers (it would start a hidden pool in each); one given in the
      // `env` option does.
      env: {
        ...process.env,
        SPINDLE_POOL_THREADS: String(opts.poolThreads),
        ...opts.env,
        ...(opts.poolThreads > 0 ? { SPINDLE_POOL_THREADS: String(opts.poolThreads) } : {}),
      },
      resourceLimits: {
        ...(opts.maxHeapMb ? { maxOldGenerationSizeMb: opts.maxHeapMb } : {}),
        ...(opts.youngGenerationMb ? { maxYoungGenerationSizeMb: opts.youngGenerationMb } : {}),
      },
    })
    this.thread.on('message', (msg: WorkerMessage) => {
      if (msg.type === 'metrics') this.#latestMetrics = { metrics: msg.metrics, at: performance.now() }
      this.emit('worker-message', msg)
    })
    this.thread.on('error', (err) => this.emit('worker-error', err))
    this.thread.once('exit', (code) => {
      this.#exited = true
      this.exitCode = code
      this.emit('exit', code)
    })
  }

  get exited (): boolean { return this.#exited }
  get inflight (): number { return Atomics.load(this.#status, STATUS_INFLIGHT) }
  get requests (): number { return Atomics.load(this.#status, STATUS_REQUESTS) >>> 0 }
  /** Shed requests since start, by SHED_REASONS index (written by the worker's plugin). */
  shedCount (i: number): number { return Atomics.load(this.#status, STATUS_SHED_FIRST + i) >>> 0 }
  /** Connections this worker closed to even out the load between workers. */
  get handedOff (): number { return Atomics.load(this.#status, STATUS_HANDED_OFF) >>> 0 }
  /** The worker's admission state, as its render queue last reported it. */
  get admission (): AdmissionState { return ADMISSION_STATES[Atomics.load(this.#status, STATUS_ADMISSION)] ?? 'normal' }
  /** Asks the worker to close the connection of its next request once it is answered. */
  handOff (): void { Atomics.store(this.#status, STATUS_HANDOFF, 1) }
  /** Tells the worker to shed renders (true) or not, from the supervisor's view of it. */
  setPressure (on: boolean): void { Atomics.store(this.#status, STATUS_PRESSURE, on ? 1 : 0) }
  /** Tells the worker whether the process is restarting a worker (protocol.ts, STATUS_RESTARTING). */
  setRestarting (on: boolean): void { Atomics.store(this.#status, STATUS_RESTARTING, on ? 1 : 0) }
  get restarting (): boolean { return Atomics.load(this.#status, STATUS_RESTARTING) !== 0 }
  get phase (): number { return Atomics.load(this.#status, STATUS_PHASE) }
  get elu (): number { return this.#elu }
  get heap (): { used: number, limit: number } | undefined { return this.#heap }

  /** What the worker's warm-up did before it listened (a worker that replaced another). */
  warmup: WarmupReport | undefined

  /** Resolves with the bound port once the worker listens; rejects with the app's error. */
  async listening (timeout: number): Promise<number> {
    return await this.#startStep(timeout, (msg) => {
      if (msg.type !== 'listening') return undefined
      this.port = msg.port
      this.warmup = msg.warmup
      return msg.port
    })
  }

  /** A handover worker: resolves once it has loaded and warmed up, ready to listen. */
  async prepared (timeout: number): Promise<void> {
    await this.#startStep(timeout, (msg) => msg.type === 'prepared' ? 0 : undefined)
  }

  /** Lets a handover worker listen. */
  listen (): void { this.#post({ type: 'listen' }) }

  /**
   * Asks the worker to close its listener and keep serving its open connections; resolves
   * once it has (or ended), or after `timeout` ms.
   */
  async unlisten (timeout: number): Promise<void> {
    if (this.#exited) return
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.off('worker-message', onMessage)
        this.off('exit', done)
        resolve()
      }
      const onMessage = (msg: WorkerMessage): void => { if (msg.type === 'unlistened') done() }
      const timer = setTimeout(done, timeout)
      this.on('worker-message', onMessage)
      this.once('exit', done)
      this.#post({ type: 'unlisten' })
    })
  }

  /** Waits for the start-up message `pick` recognises; rejects with the app's error, an exit or the timeout. */
  async #startStep (timeout: number, pick: (msg: WorkerMessage) => number | undefined): Promise<number> {
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), timeout)
    try {
      return await new Promise<number>((resolve, reject) => {
        const onMessage = (msg: WorkerMessage): void => {
          const value = pick(msg)
          if (value !== undefined) resolve(value)
          if (msg.type === 'start-failed') {
            const cause = deserializeError(msg.error)
            reject(new SPINDLE_RUNTIME_WORKER_START_FAILED(this.id, cause.message, { cause }))
          }
        }
        const onError = (err: Error): void => {
          reject(new SPINDLE_RUNTIME_WORKER_START_FAILED(this.id, err.message, { cause: err }))
        }
        const onExit = (code: number): void => {
          reject(new SPINDLE_RUNTIME_WORKER_START_FAILED(this.id, `the thread exited with code ${code}`))
        }
        ac.signal.addEventListener('abort', () => reject(new SPINDLE_RUNTIME_START_TIMEOUT(this.id, timeout)))
        this.on('worker-message', onMessage)
        this.once('worker-error', onError)
        this.once('exit', onExit)
        ac.signal.addEventListener('abort', () => {
          this.off('worker-message', onMessage)
          this.off('worker-error', onError)
          this.off('exit', onExit)
        })
      })
    } finally {
      clearTimeout(timer)
      ac.abort()
    }
  }

  /**
   * Reads the heartbeat and utilization from outside the worker's event loop and returns
   * how long the loop has been silent.
   */
  sample (now: number): number {
    const beat = Atomics.load(this.#status, STATUS_HEARTBEAT)
    if (beat !== this.#lastBeat) {
      this.#lastBeat = beat
      this.#lastBeatAt = now
    }
    const perf = this.thread.performance
    const current = perf.eventLoopUtilization()
    this.#elu = this.#eluPrev ? perf.eventLoopUtilization(current, this.#eluPrev).utilization : current.utilization
    this.#eluPrev = current
    return now - this.#lastBeatAt
  }

  /** Refreshes heap statistics in the background (the call needs the worker's isolate). */
  refreshHeap (): void {
    const thread = this.thread as Worker & { getHeapStatistics?: () => Promise<{ used_heap_size: number, heap_size_limit: number }> }
    if (this.#heapPending || this.#exited || typeof thread.getHeapStatistics !== 'function') return
    this.#heapPending = true
    // With resourceLimits, V8's heap_size_limit adds a large young-generation reserve to the
    // old-generation cap the worker actually dies at: judge against the cap.
    const cap = this.#maxOldMb ? this.#maxOldMb * 1024 * 1024 : Infinity
    thread.getHeapStatistics().then((s) => {
      this.#heap = { used: s.used_heap_size, limit: Math.min(s.heap_size_limit, cap) }
    }, () => {}).finally(() => { this.#heapPending = false })
  }

  /**
   * Asks the worker to drain and waits for its thread to end; terminates it past the deadline.
   * `idleGrace`: see the protocol's drain message.
   */
  async drain (timeout: number, exitGrace = 1000, idleGrace = SHUTDOWN_IDLE_GRACE): Promise<{ unfinished: number, terminated: boolean }> {
    if (this.#exited) return { unfinished: 0, terminated: false }
    let drained: number | undefined
    const onMessage = (msg: WorkerMessage): void => {
      if (msg.type === 'drained') drained = msg.unfinished
    }
    this.on('worker-message', onMessage)
    this.#post({ type: 'drain', timeout, idleGrace })
    const exited = await this.#waitExit(timeout + exitGrace)
    this.off('worker-message', onMessage)
    if (exited) return { unfinished: drained ?? 0, terminated: false }
    // A worker that never reported its drain (its loop held by a long synchronous render, say)
    // could not count what it cuts: its status block still holds what is in flight.
    const unfinished = drained ?? this.inflight
    await this.terminate()
    return { unfinished, terminated: true }
  }

  async terminate (): Promise<void> {
    if (this.#exited) return
    await this.thread.terminate()
  }

  async #waitExit (timeout: number): Promise<boolean> {
    if (this.#exited) return true
    const ac = new AbortController()
    // The exit grace on top of shutdownTimeout may pass what a timer takes.
    const timer = setTimeout(() => ac.abort(), Math.min(timeout, MAX_TIMER_MS))
    try {
      await once(this, 'exit', { signal: ac.signal })
      return true
    } catch {
      return this.#exited
    } finally {
      clearTimeout(timer)
    }
  }

  /** The latest request metrics the worker sent (unasked, in answer, or its final ones once drained). */
  get lastMetrics (): MetricSnapshot[] | undefined { return this.#latestMetrics?.metrics }

  /**
   * The worker's request metrics, or undefined if it does not answer within `timeout` ms (a
   * stuck loop). A worker with requests in flight is not asked: it may be in the middle of a
   * render, and the scrape would wait until it ends (at capacity on the Next.js example,
   * scrapes that asked took 14 ms at the median and 53 at p99, bench/metrics-scrape.mjs).
   * The figures it sent unasked stand in, while they are younger than METRICS_STALE_MS (two
   * of its sending intervals); older ones say its loop has not turned for that long, and it
   * is asked. An idle worker is asked, so figures read once the traffic's responses have
   * closed are exact.
   */
  async metrics (timeout: number): Promise<MetricSnapshot[] | undefined> {
    if (this.#exited) return undefined
    const latest = this.#latestMetrics
    if (latest && this.inflight > 0 && performance.now() - latest.at < METRICS_STALE_MS) return latest.metrics
    return await this.#askMetrics(timeout)
  }

  async #askMetrics (timeout: number): Promise<MetricSnapshot[] | undefined> {
    const requestId = ++this.#metricsRequests
    return await new Promise((resolve) => {
      const done = (value: MetricSnapshot[] | undefined): void => {
        clearTimeout(timer)
        this.off('worker-message', onMessage)
        this.off('exit', onExit)
        resolve(value)
      }
      const onMessage = (msg: WorkerMessage): void => {
        if (msg.type === 'metrics' && msg.requestId === requestId) done(msg.metrics)
      }
      const onExit = (): void => done(undefined)
      const timer = setTimeout(() => done(undefined), timeout)
      timer.unref()
      this.on('worker-message', onMessage)
      this.once('exit', onExit)
      this.#post({ type: 'metrics', requestId })
    })
  }

  #post (message: SupervisorMessage): void {
    try { this.thread.postMessage(message) } catch { /* the thread is gone */ }
  }
}
