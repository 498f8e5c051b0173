// The contract between the supervisor (main thread) and a worker thread: what the worker
// receives in workerData, the messages both sides send, and the layout of the small
// shared-memory block the supervisor reads without the worker's event loop.
import type { ResolvedSheddingOptions } from './shed-options.ts'
import type { ResolvedWarmup } from './options.ts'

/** Int32 slots of a worker's status block (one SharedArrayBuffer per worker). */
export const STATUS_HEARTBEAT = 0 // incremented by the worker's event loop every HEARTBEAT_INTERVAL ms
export const STATUS_INFLIGHT = 1 // requests received whose response has not closed yet
export const STATUS_PHASE = 2 // one of the PHASE_* values
export const STATUS_REQUESTS = 3 // requests received since start (wraps at 2^32)
export const STATUS_PRESSURE = 4 // set by the supervisor: 1 while the worker must shed renders
/** Shed requests since start, one slot per SHED_REASONS entry, from this index on. */
export const STATUS_SHED_FIRST = 5
export const SHED_REASONS = ['backlog', 'eventLoopDelay', 'eventLoopUtilization', 'heapUsedBytes', 'overload', 'queueTime', 'supervisor'] as const
export type ShedReason = typeof SHED_REASONS[number]
/** Set to 1 by the supervisor: close the connection of the next request (connection balance). */
export const STATUS_HANDOFF = STATUS_SHED_FIRST + SHED_REASONS.length
/** Connections the worker closed for connection balance since start. */
export const STATUS_HANDED_OFF = STATUS_HANDOFF + 1
/** The worker's admission state: an index into ADMISSION_STATES (admission/controller.ts). */
export const STATUS_ADMISSION = STATUS_HANDED_OFF + 1
/**
 * Set by the supervisor: 1 while the process restarts a worker (a replacement starts up, a
 * replaced worker drains, a crashed one is restarted) and for a latency budget after. The
 * other workers then have less of the machine and more of the clients; their admission
 * lets a burst wait longer (admission/controller.ts, RESTART_STRETCH).
 */
export const STATUS_RESTARTING = STATUS_ADMISSION + 1
export const STATUS_SLOTS = STATUS_RESTARTING + 1
export const STATUS_BYTES = STATUS_SLOTS * Int32Array.BYTES_PER_ELEMENT

export const PHASE_STARTING = 0
export const PHASE_LISTENING = 1
export const PHASE_DRAINING = 2
export const PHASE_CLOSED = 3

/** How often a worker's event loop ticks its heartbeat. */
export const HEARTBEAT_INTERVAL = 50

export interface WorkerData {
  readonly kind: 'spindle-worker'
  readonly id: number
  readonly generation: number
  readonly appPath: string
  readonly appOptions: Record<string, unknown>
  readonly host: string
  readonly port: number
  /** Listen with SO_REUSEPORT (reusePort mode); false in pool mode, where one worker owns the port. */
  readonly reusePort: boolean
  /**
   * A replacement that cannot share the port with the worker it replaces (pool mode): it
   * loads and warms up, sends 'prepared', and listens only on 'listen', which the
   * supervisor sends once the old worker has closed its listener ('unlisten', 'unlistened').
   */
  readonly handover: boolean
  readonly status: SharedArrayBuffer
  readonly shared: Record<string, unknown>
  /** Load-shedding options, or false when shedding is off. */
  readonly shedding: ResolvedSheddingOptions | false
  /** Whether the worker keeps request metrics (sent every METRICS_PUSH_MS, and when the supervisor asks with 'metrics'). */
  readonly metrics: boolean
  /** Requests to send through the app before listening (a worker that replaces another); false: none. */
  readonly warmup: ResolvedWarmup | false
}

/** What a worker's warm-up did: requests sent, how many answered 5xx or failed, and how long it took. */
export interface WarmupReport { requests: number, failed: number, ms: number }

/**
 * How often (ms) a worker that keeps request metrics sends them unasked. A scrape takes a
 * busy worker's latest (docs/runtime.md#metrics): they are at most this old, and a
 * snapshot costs the worker a fraction of a millisecond.
 */
export const METRICS_PUSH_MS = 1000
/** A busy worker whose last figures are this old (ms, two sending intervals) has not turned its loop since: it is asked, and counted as unanswered if silent. */
export const METRICS_STALE_MS = 2 * METRICS_PUSH_MS

/** Label names and values of one series, in the order they are printed. */
export type MetricLabels = Record<string, string | number>

/** One series of a counter or a gauge. */
export interface ScalarFigures {
  value: number
  labels: MetricLabels
}

/**
 * One histogram series: the observations in each bucket (not cumulative: `buckets[i]` counts
 * those above `bounds[i - 1]` and up to `bounds[i]`; those above the last bound are only in
 * `count`), their sum (seconds) and their count.
 */
export interface HistogramSeriesFigures {
  labels: MetricLabels
  buckets: number[]
  sum: number
  count: number
}

/**
 * One metric's figures as plain, cloneable data. A histogram crosses the thread boundary as
 * one entry per series rather than a labelled value per bucket (prom-client's JSON): with
 * 100 routes that was 1,600 objects per worker, cloned every second and merged on every
 * scrape, and a scrape took 50-100 ms of the main thread (docs/runtime.md#metrics).
 */
export type MetricSnapshot =
  | { type: 'histogram', name: string, help: string, bounds: number[], series: HistogramSeriesFigures[] }
  | { type: 'counter' | 'gauge', name: string, help: string, values: ScalarFigures[] }

/** Why a render pool thread was lost (pool mode): it threw or exited (`crashed`), or its loop stopped past hangTimeout and it was ended (`hung`). */
export const POOL_THREAD_LOSSES = ['crashed', 'hung'] as const
export type PoolThreadLoss = typeof POOL_THREAD_LOSSES[number]

export interface SerializedError {
  name: string
  message: string
  code?: string
  stack?: string
}

export type WorkerMessage =
  | { type: 'listening', port: number, address: string, warmup?: WarmupReport }
  | { type: 'start-failed', error: SerializedError }
  | { type: 'drained', unfinished: number }
  | { type: 'prepared' }
  | { type: 'unlistened' }
  | { type: 'unhandled-rejection', error: SerializedError }
  /** A render pool thread of this worker (pool mode) failed, hung or could not be restarted: the supervisor logs it (pool/pool-report.ts). */
  | { type: 'pool-event', level: 'warn' | 'error', message: string, error?: SerializedError, threadId?: number, lost?: PoolThreadLoss }
  /**
   * The worker's request metrics: in answer to the supervisor's 'metrics' (its requestId),
   * or unasked every METRICS_PUSH_MS (requestId 0), so a scrape need not wait for a worker
   * busy rendering (docs/runtime.md#metrics).
   */
  | { type: 'metrics', requestId: number, metrics: MetricSnapshot[] }

/**
 * Idle keep-alive grace on shutdown (ms): short, so a stop is quick; a client that sends on
 * such a connection as it closes sees a reset and must retry, as with any server that stops.
 */
export const SHUTDOWN_IDLE_GRACE = 250
/**
 * Idle keep-alive grace when a worker is replaced (ms): clients that keep a connection and
 * send every second or so (a browser, a rate-limited client) send within it, get their answer
 * with Connection: close and reconnect to the replacement, so a rolling restart closes no
 * socket under a request. Past it, the remaining idle connections are closed.
 */
export const REPLACEMENT_IDLE_GRACE = 2000

export type SupervisorMessage =
  /**
   * Stop taking connections, finish what is in flight within `timeout` ms. `idleGrace`: ms an
   * idle keep-alive connection is left open for the client's next request (answered with
   * Connection: close) before it is closed; closing it sooner races a client about to send.
   */
  | { type: 'drain', timeout: number, idleGrace: number }
  | { type: 'metrics', requestId: number }
  /** A handover replacement may listen now: the port is free. */
  | { type: 'listen' }
  /** Close the listener (answered with 'unlistened'), keep serving open connections. */
  | { type: 'unlisten' }

export function serializeError (err: unknown): SerializedError {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code
    return {
      name: err.name,
      message: err.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(err.stack ? { stack: err.stack } : {}),
    }
  }
  return { name: 'Error', message: String(err) }
}

export function deserializeError (data: SerializedError): Error {
  const err = new Error(data.message)
  err.name = data.name
  if (data.stack) err.stack = data.stack
  if (data.code) (err as Error & { code: string }).code = data.code
  return err
}
