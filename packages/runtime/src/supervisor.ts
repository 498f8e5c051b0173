import { EventEmitter } from 'node:events'
import type { AdmissionState } from './admission/controller.ts'
import { observeLoad, pickHandoff } from './balance.ts'
import { assess, restartDelayFor, type Verdict } from './health-policy.ts'
import { ManagedWorker } from './managed-worker.ts'
import type { ResolvedOptions } from './options.ts'
import { type MetricSnapshot, PHASE_DRAINING, PHASE_LISTENING, type PoolThreadLoss, REPLACEMENT_IDLE_GRACE, SHED_REASONS, type ShedReason, type WorkerMessage } from './protocol.ts'
import { judgeFlood, judgeShedding, type ShedWatch } from './shed-watch.ts'

export type WorkerState = 'starting' | 'ready' | 'overloaded' | 'unresponsive' | 'replacing' | 'restarting' | 'stopped'

export interface WorkerStatus {
  id: number
  generation: number
  threadId: number | null
  state: WorkerState
  elu: number
  heapUsed: number | null
  heapLimit: number | null
  inflight: number
  requests: number
  restarts: number
  silentForMs: number
  uptimeMs: number
  /**
   * Requests shed by load shedding in this worker slot since the server started, by reason:
   * the workers it ran before (restarted or replaced ones) included, so the count never
   * goes back.
   */
  shed: Record<ShedReason, number>
  /** Connections the worker closed since it started to even out the load between workers. */
  handedOff: number
  /** The worker's admission state (docs/overload.md#admission). */
  admission: AdmissionState
  /**
   * Render pool threads of this worker slot lost since the server started, by reason (pool
   * mode, or an adapter's `threads` in a worker): each was replaced; its requests failed.
   */
  poolThreadsLost: Record<PoolThreadLoss, number>
}

interface Slot {
  readonly id: number
  worker: ManagedWorker | undefined
  generation: number
  restarts: number
  crashes: number
  silentFor: number
  verdict: Verdict
  replacing: boolean
  restartTimer: NodeJS.Timeout | undefined
  shedWatch: ShedWatch
  /** After a replacement failed to start, no new attempt before this time (ms since epoch). */
  replaceNotBefore: number
  /** Requests shed by the slot's workers that have exited, by reason (index of SHED_REASONS). */
  readonly shedBefore: number[]
  /** Render pool threads lost by the slot's workers, by reason. */
  readonly poolThreadsLost: Record<PoolThreadLoss, number>
}

/** What a replacement came to: `skipped` when none was started (the slot was being replaced, or shutdown began). */
export type ReplaceOutcome = 'replaced' | 'failed' | 'stopped' | 'skipped'

/** What a rolling restart did; `stopped`: shutdown began before it was through. */
export interface RollingRestartResult { replaced: number, failed: number, stopped: boolean }

/** A crash-free run this long forgets earlier crashes when computing the next backoff. */
const STABLE_AFTER = 30_000
const HEAP_EVERY = 1000

/**
 * The main-thread side: starts the workers, watches them from outside their event loops,
 * restarts crashed ones with backoff, replaces stalled ones, drains, and reports.
 */
export class Supervisor extends EventEmitter {
  readonly #opts: ResolvedOptions
  readonly #slots: Slot[]
  readonly #live = new Set<ManagedWorker>()
  /** Restarted workers that failed to start: their exit is expected. */
  readonly #failedStarts = new WeakSet<ManagedWorker>()
  #port: number
  #monitor: NodeJS.Timeout | undefined
  #lastHeapAt = 0
  #started = false
  /** The rolling restart under way, and whether another was asked for meanwhile. */
  #rolling: Promise<RollingRestartResult> | undefined
  #rollAgain = false
  #closing = false
  /** Until when (ms since epoch) the workers are told the process restarts a worker (#noteRestarting). */
  #restartingUntil = 0
  /** What the workers were last told (#noteRestarting). */
  #restarting = false

  constructor (opts: ResolvedOptions) {
    super()
    this.#opts = opts
    this.#port = opts.port
    this.#slots = Array.from({ length: opts.workers }, (_, i) => ({
      id: i + 1,
      worker: undefined,
      generation: 0,
      restarts: 0,
      crashes: 0,
      silentFor: 0,
      verdict: 'healthy' as Verdict,
      replacing: false,
      restartTimer: undefined,
      replaceNotBefore: 0,
      shedWatch: { worker: undefined, total: 0, lastShedAt: 0, since: undefined, overloaded: false },
      shedBefore: SHED_REASONS.map(() => 0),
      poolThreadsLost: { crashed: 0, hung: 0 },
    }))
  }

  get port (): number { return this.#port }
  get closing (): boolean { return this.#closing }
  /** Whether the workers are told that the process restarts a worker (protocol.ts, STATUS_RESTARTING). */
  get restarting (): boolean { return this.#restarting }

  /** Starts every worker and resolves once all listen; any start-up failure stops them all and rejects. */
  async start (): Promise<void> {
    const [first, ...rest] = this.#slots
    try {
      // With port 0 the first worker picks the port and the others join it.
      if (this.#port === 0 && first) {
        await this.#startInSlot(first)
        await Promise.all(rest.map((s) => this.#startInSlot(s)))
      } else {
        await Promise.all(this.#slots.map((s) => this.#startInSlot(s)))
      }
    } catch (err) {
      this.#closing = true
      // Workers that did start are drained rather than terminated: terminating a thread that
      // loaded native addons can take the whole process down (nodejs/node#65100).
      await Promise.all([...this.#live].map((w) => {
        w.retiring = 'start-failed'
        return w.phase === PHASE_LISTENING ? w.drain(1000, 1000) : w.terminate()
      }))
      throw err
    }
    this.#started = true
    const every = Math.max(10, Math.min(100, this.#opts.heartbeatTimeout / 4))
    this.#monitor = setInterval(() => this.#tick(), every)
    this.#monitor.unref()
  }

  async #startInSlot (slot: Slot): Promise<void> {
    const worker = this.#spawn(slot)
    slot.worker = worker
    this.#port = await worker.listening(this.#opts.startTimeout)
  }

  #spawn (slot: Slot, handover = false): ManagedWorker {
    slot.generation++
    const worker = new ManagedWorker(slot.id, slot.generation, this.#port, this.#opts, handover)
    this.#live.add(worker)
    worker.on('worker-error', (err: Error) => {
      if (this.#started) this.#opts.logger.error({ worker: slot.id, ...errorFields(err) }, 'worker threw an uncaught error')
    })
    worker.on('worker-message', (msg: WorkerMessage) => {
      if (msg.type === 'unhandled-rejection') {
        this.#opts.logger.error({ worker: slot.id, err: msg.error.message, stack: msg.error.stack }, 'unhandled promise rejection in a worker')
      } else if (msg.type === 'pool-event') {
        const error = msg.error ? { err: msg.error.message, ...(msg.error.code ? { code: msg.error.code } : {}), stack: msg.error.stack } : {}
        this.#opts.logger[msg.level]({ worker: slot.id, ...(msg.threadId !== undefined ? { threadId: msg.threadId } : {}), ...error }, msg.message)
        if (msg.lost !== undefined && Object.hasOwn(slot.poolThreadsLost, msg.lost)) slot.poolThreadsLost[msg.lost]++
      }
    })
    worker.once('exit', (code: number) => {
      this.#live.delete(worker)
      // Its counters outlive the thread (shared memory): they join the slot's total.
      SHED_REASONS.forEach((_, i) => { slot.shedBefore[i]! += worker.shedCount(i) })
      // Its last request metrics (final once it drained): the control port folds them into the slot's.
      const metrics = worker.lastMetrics
      if (metrics) this.emit('worker-metrics-final', { id: slot.id, generation: worker.generation, metrics })
      this.#onExit(slot, worker, code)
    })
    this.#noteRestarting(Date.now())
    return worker
  }

  /**
   * Tells every worker whether the process restarts a worker: one starts up or drains, or a
   * slot waits for its restart after a crash. The others then have less of the machine and
   * more of the clients, and their admission lets a burst wait longer (protocol.ts,
   * STATUS_RESTARTING). Held for a latency budget (maxBacklog) after the last one ends, while
   * the queues built meanwhile drain.
   */
  #noteRestarting (now: number): void {
    let under = false
    if (this.#started && !this.#closing) {
      under = this.#slots.some((s) => s.worker === undefined)
      for (const w of this.#live) if (w.retiring !== undefined || w.phase !== PHASE_LISTENING) under = true
      if (under) this.#restartingUntil = now + (this.#opts.shedding ? this.#opts.shedding.maxBacklog : 0)
    }
    const on = !this.#closing && (under || now < this.#restartingUntil)
    this.#restarting = on
    for (const w of this.#live) if (w.restarting !== on) w.setRestarting(on)
  }

  #onExit (slot: Slot, worker: ManagedWorker, code: number): void {
    if (slot.worker !== worker || worker.retiring || this.#closing || !this.#started) return
    slot.worker = undefined
    slot.crashes = Date.now() - worker.startedAt > STABLE_AFTER ? 1 : slot.crashes + 1
    const delay = restartDelayFor(slot.crashes, this.#opts.restartDelay, this.#opts.maxRestartDelay)
    // A restart that failed to start was logged with its reason (#restart): only the next try is news.
    if (this.#failedStarts.has(worker)) this.#opts.logger.info({ worker: slot.id, restartInMs: delay }, 'trying to start the worker again')
    else this.#opts.logger.warn({ worker: slot.id, code, restartInMs: delay }, 'worker exited unexpectedly')
    this.emit('worker-exit', { id: slot.id, code })
    this.#scheduleRestart(slot, delay)
  }

  #scheduleRestart (slot: Slot, delay: number): void {
    clearTimeout(slot.restartTimer)
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = undefined
      void this.#restart(slot)
    }, delay)
    slot.restartTimer.unref()
  }

  async #restart (slot: Slot): Promise<void> {
    if (this.#closing) return
    const worker = this.#spawn(slot)
    slot.worker = worker
    slot.restarts++
    try {
      await worker.listening(this.#opts.startTimeout)
      this.#opts.logger.info({ worker: slot.id, generation: worker.generation, warmup: worker.warmup }, 'worker restarted')
      this.emit('worker-restarted', { id: slot.id })
    } catch (err) {
      this.#failedStarts.add(worker)
      this.#opts.logger.error({ worker: slot.id, ...errorFields(err as Error) }, 'restarted worker failed to start')
      // Its exit schedules the next attempt with a longer delay.
      if (!worker.exited) await worker.terminate()
    }
  }

  #tick (): void {
    const now = Date.now()
    this.#noteRestarting(now)
    const heapDue = now - this.#lastHeapAt >= HEAP_EVERY
    if (heapDue) this.#lastHeapAt = now
    const balancing: ManagedWorker[] = []
    for (const slot of this.#slots) {
      const w = slot.worker
      if (!w || w.retiring || w.phase !== PHASE_LISTENING) continue
      slot.silentFor = w.sample(now)
      observeLoad(w.balance, w.elu)
      if (!slot.replacing) balancing.push(w)
      if (heapDue) w.refreshHeap()
      const heap = w.heap
      const previous = slot.verdict
      slot.verdict = assess({ silentFor: slot.silentFor, heapUsed: heap?.used, heapLimit: heap?.limit }, this.#opts)
      if (slot.crashes > 0 && now - w.startedAt > STABLE_AFTER) slot.crashes = 0
      if (this.#opts.shedding) {
        if (judgeShedding(slot.shedWatch, w, now, this.#opts.shedding, this.#opts.heapLimitRatio)) {
          this.#opts.logger.warn({ worker: slot.id }, slot.shedWatch.overloaded ? 'worker overloaded: not ready while it keeps shedding' : 'worker no longer overloaded')
        }
        const flood = judgeFlood(slot.shedWatch, w, now)
        if (flood) {
          this.#opts.logger.warn({ worker: slot.id, ...flood }, 'worker sheds far more requests than it serves: far past its capacity, or clients that ask again the moment a 503 arrives (a closed-loop load tester); to measure capacity, start with --no-shedding (docs/overload.md#closed-loop-load-testers)')
        }
      }
      // Going on from unresponsive to stalled is told by the replacement's own line.
      if (slot.verdict !== previous && (slot.verdict === 'unresponsive' || (previous === 'unresponsive' && slot.verdict === 'healthy'))) {
        this.#opts.logger.warn({ worker: slot.id, silentForMs: slot.silentFor }, slot.verdict === 'unresponsive' ? 'worker unresponsive' : 'worker responsive again')
      }
      if ((slot.verdict === 'stalled' || slot.verdict === 'heap-limit') && !slot.replacing && !this.#closing && now >= slot.replaceNotBefore) {
        void this.replace(slot.id, slot.verdict)
      }
    }
    if (this.#opts.balanceConnections && !this.#closing) {
      const i = pickHandoff(balancing.map((w) => w.balance), now)
      if (i >= 0) balancing[i]!.handOff()
    }
  }

  /**
   * Starts a new worker for the slot and, once it listens, retires the old one: drained
   * when it can still run, terminated when its event loop is stuck.
   */
  async replace (id: number, reason: string): Promise<ReplaceOutcome> {
    const slot = this.#slots[id - 1]
    if (!slot || slot.replacing || this.#closing) return 'skipped'
    const old = slot.worker
    slot.replacing = true
    this.#opts.logger.warn({ worker: id, reason }, 'replacing worker')
    // Without SO_REUSEPORT (pool mode) two listeners cannot share the port: the new worker
    // gets ready, the old one closes its listener, and only then does the new one listen.
    const handover = this.#opts.mode === 'pool' && old !== undefined && !old.exited
    const next = this.#spawn(slot, handover)
    let released: Promise<{ unfinished: number, terminated: boolean }> | undefined
    let portLeft = false
    try {
      if (handover) {
        await next.prepared(this.#opts.startTimeout)
        // Only the listener closes here: the old worker keeps serving its open connections,
        // which are told to close only once the new worker listens (the drain below).
        // A stuck worker cannot close its listener: it ends first (its descriptors close with it).
        if (reason === 'stalled') await (released = this.#release(old!, reason))
        else await old!.unlisten(1000)
        portLeft = true
        next.listen()
      }
      await next.listening(this.#opts.startTimeout)
    } catch (err) {
      next.retiring = 'start-failed'
      await next.terminate()
      if (this.#closing) {
        // The shutdown ended the replacement (and drains the old worker): no failure of its own.
        slot.replacing = false
        return 'stopped'
      }
      if (portLeft) {
        // The old worker let go of the port already: the slot restarts like after a crash.
        slot.worker = undefined
        slot.replacing = false
        slot.crashes++
        const delay = restartDelayFor(slot.crashes, this.#opts.restartDelay, this.#opts.maxRestartDelay)
        this.#opts.logger.error({ worker: id, reason, err: (err as Error).message, restartInMs: delay }, 'replacement worker failed to take over the port')
        this.#scheduleRestart(slot, delay)
        await (released ?? this.#release(old!, reason))
        return 'failed'
      }
      // Every attempt counts, and the next one backs off like a crash restart: a replacement
      // that cannot start must not be retried on every tick while the old worker serves.
      slot.restarts++
      slot.crashes++
      const delay = restartDelayFor(slot.crashes, this.#opts.restartDelay, this.#opts.maxRestartDelay)
      slot.replaceNotBefore = Date.now() + delay
      this.#opts.logger.error({ worker: id, reason, err: (err as Error).message, retryInMs: delay }, 'replacement worker failed to start')
      slot.replacing = false
      // A stuck worker must go even without a successor; the slot then restarts with backoff.
      if (reason === 'stalled' && old && !old.exited) {
        old.retiring = reason
        slot.worker = undefined
        await old.terminate()
        this.#scheduleRestart(slot, delay)
      }
      return 'failed'
    }
    if (next.warmup) this.#opts.logger.info({ worker: id, ...next.warmup }, 'replacement warmed up before taking traffic')
    slot.worker = next
    slot.restarts++
    slot.verdict = 'healthy'
    slot.silentFor = 0
    slot.replacing = false
    this.emit('worker-replaced', { id, reason })
    if (!old || (old.exited && !released)) return 'replaced'
    const { unfinished, terminated } = await (released ?? this.#release(old, reason))
    if (reason === 'stalled') {
      if (unfinished > 0) this.#opts.logger.warn({ worker: id, unfinished }, 'stuck worker ended: the requests it held were cut')
    } else if (unfinished > 0 || terminated) {
      this.#opts.logger.warn({ worker: id, unfinished, terminated }, 'old worker did not finish all requests in shutdownTimeout')
    }
    return 'replaced'
  }

  /** Retires a replaced worker: terminated when its loop is stuck, else drained. */
  async #release (old: ManagedWorker, reason: string): Promise<{ unfinished: number, terminated: boolean }> {
    old.retiring = reason
    if (reason === 'stalled') {
      // Its loop is stuck: what it holds is cut, as its status block counts it.
      const unfinished = old.inflight
      await old.terminate()
      return { unfinished, terminated: false }
    }
    // Idle keep-alive clients get time to send their next request and be told to close,
    // instead of having their socket closed under them.
    return await old.drain(this.#opts.shutdownTimeout, undefined, REPLACEMENT_IDLE_GRACE)
  }

  /**
   * Replaces every worker, one at a time (SIGHUP). A restart asked for while one runs is
   * run once more after it (however many were asked): every worker then runs what was
   * deployed by the last signal, and never two slots are replaced at once.
   */
  async rollingRestart (): Promise<RollingRestartResult> {
    if (this.#rolling) {
      this.#rollAgain = true
      return await this.#rolling
    }
    this.#rolling = (async () => {
      let replaced = 0
      let failed = 0
      do {
        this.#rollAgain = false
        for (const slot of this.#slots) {
          if (this.#closing) break
          if (!slot.worker) continue
          const outcome = await this.replace(slot.id, 'rolling-restart')
          if (outcome === 'replaced') replaced++
          else if (outcome === 'failed') failed++
        }
      } while (this.#rollAgain && !this.#closing)
      return { replaced, failed, stopped: this.#closing }
    })()
    try {
      return await this.#rolling
    } finally {
      this.#rolling = undefined
    }
  }

  readyWorkers (): number {
    let n = 0
    for (const slot of this.#slots) {
      const w = slot.worker
      if (w && !w.retiring && w.phase === PHASE_LISTENING && slot.verdict === 'healthy' && !slot.shedWatch.overloaded) n++
    }
    return n
  }

  isReady (): boolean {
    return this.#started && !this.#closing && this.readyWorkers() >= this.#opts.minReadyWorkers
  }

  /** Marks the server as shutting down: readiness turns false at once. */
  beginShutdown (): void {
    this.#closing = true
  }

  status (): WorkerStatus[] {
    const now = Date.now()
    return this.#slots.map((slot) => {
      const w = slot.worker
      let state: WorkerState
      if (!w) state = this.#closing ? 'stopped' : 'restarting'
      else if (slot.replacing) state = 'replacing'
      else if (w.phase !== PHASE_LISTENING) state = w.exited ? 'stopped' : 'starting'
      else if (slot.verdict !== 'healthy') state = 'unresponsive'
      else state = slot.shedWatch.overloaded ? 'overloaded' : 'ready'
      // The slot's exited workers, its worker and a replaced one still draining.
      const shed = {} as Record<ShedReason, number>
      SHED_REASONS.forEach((reason, i) => { shed[reason] = slot.shedBefore[i]! })
      for (const live of this.#live) {
        if (live.id === slot.id) SHED_REASONS.forEach((reason, i) => { shed[reason] += live.shedCount(i) })
      }
      return {
        id: slot.id,
        // The serving worker's: a replacement that failed to start does not count.
        generation: w?.generation ?? slot.generation,
        threadId: w && !w.exited ? w.thread.threadId : null,
        state,
        elu: w ? Math.round(w.elu * 1000) / 1000 : 0,
        heapUsed: w?.heap?.used ?? null,
        heapLimit: w?.heap?.limit ?? null,
        inflight: w ? w.inflight : 0,
        requests: w ? w.requests : 0,
        restarts: slot.restarts,
        silentForMs: slot.silentFor,
        uptimeMs: w ? now - w.startedAt : 0,
        shed,
        handedOff: w ? w.handedOff : 0,
        admission: w ? w.admission : 'normal',
        poolThreadsLost: { ...slot.poolThreadsLost },
      }
    })
  }

  /**
   * The request metrics of every live worker, a replaced one still draining included (its
   * slot's `id`, its `generation`): a busy worker's latest figures sent unasked, and
   * undefined from one that does not answer within `timeout` ms, whose heartbeat already
   * stopped, or that does not serve yet (ManagedWorker.metrics). `current`:
   * it is its slot's serving worker, whose silence says its figures are stale (a replaced
   * one may end before it answers). `latest`: the newest figures it ever sent, asked or
   * not, which stand in for an answer that did not come. A worker missing from the list has exited: its last
   * figures are final.
   */
  async workerMetrics (timeout: number): Promise<Array<{ id: number, generation: number, current: boolean, metrics: MetricSnapshot[] | undefined, latest: MetricSnapshot[] | undefined }>> {
    return await Promise.all([...this.#live].map(async (worker) => {
      const slot = this.#slots[worker.id - 1]
      const serving = !worker.exited && (worker.phase === PHASE_LISTENING || worker.phase === PHASE_DRAINING)
      const current = slot?.worker === worker && worker.phase === PHASE_LISTENING && !worker.exited
      // A worker whose heartbeat already stopped cannot answer: not worth waiting for.
      const silent = current && slot.silentFor >= this.#opts.heartbeatTimeout
      const metrics = serving && !silent ? await worker.metrics(timeout) : undefined
      return { id: worker.id, generation: worker.generation, current, metrics, latest: worker.lastMetrics }
    }))
  }

  /** Drains every worker in parallel; the whole close stays within shutdownTimeout. */
  async close (): Promise<{ unfinished: number }> {
    // Requests get most of the budget; the rest is for threads to end or be terminated.
    const exitGrace = Math.min(1000, this.#opts.shutdownTimeout * 0.2)
    const drainFor = this.#opts.shutdownTimeout - exitGrace
    this.#closing = true
    clearInterval(this.#monitor)
    for (const slot of this.#slots) clearTimeout(slot.restartTimer)
    const now = Date.now()
    const results = await Promise.all([...this.#live].map(async (w) => {
      w.retiring ??= 'shutdown'
      // A worker whose loop is stuck (silent for stallTimeout) cannot drain: waiting for it
      // would only delay the exit, and what it holds is cut. A busy one (a long synchronous
      // render) drains once its loop turns, and one a rolling restart is draining already goes
      // on draining: drain() again only waits for it, within this close's budget.
      const serving = w.phase === PHASE_LISTENING || w.phase === PHASE_DRAINING
      if (!serving || w.sample(now) >= this.#opts.stallTimeout) {
        const unfinished = w.inflight
        await w.terminate()
        return { unfinished }
      }
      const { unfinished, terminated } = await w.drain(drainFor, exitGrace)
      if (terminated) this.#opts.logger.warn({ worker: w.id, inflight: unfinished }, 'worker terminated by shutdownTimeout before it finished draining')
      return { unfinished }
    }))
    return { unfinished: results.reduce((sum, r) => sum + r.unfinished, 0) }
  }
}

/** What a log line says of an error: its message, code, stack and its cause's. */
function errorFields (err: Error & { code?: unknown, cause?: unknown }): Record<string, unknown> {
  const cause = err.cause as (Error & { code?: unknown }) | undefined
  return {
    err: err.message,
    ...(err.code !== undefined ? { code: err.code } : {}),
    stack: err.stack,
    ...(cause instanceof Error ? { cause: cause.stack ?? cause.message } : {}),
  }
}
