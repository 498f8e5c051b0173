import { isAbsolute, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { defaultWorkerCount } from './cpus.ts'
import { checkCloneable, fail } from './option-checks.ts'
import { optionChecker } from '@spindle/options'
import { serveSchema } from './option-schema.ts'
import { resolveMode, type Mode, type ModeOption } from './mode.ts'
import { silentLogger, type SupervisorLogger } from './logger.ts'
import { defaultYoungGenerationMb } from './v8-young.ts'
import { resolveSheddingOptions, type LoadSheddingOptions, type ResolvedSheddingOptions } from './shed-options.ts'

/** A handler on the control server (main thread). It must never block. */
export type ControlHandler = (req: IncomingMessage, res: ServerResponse) => void

export interface ServeOptions {
  /** The app module: a path (relative to `cwd`) or file URL. Its default export is a Fastify plugin. */
  app: string | URL
  /** Options passed to the app plugin when it is registered. Must be structured-cloneable: each worker gets a copy. */
  appOptions?: Record<string, unknown>
  /**
   * Threads that render: worker threads in reusePort mode, render pool threads in pool mode.
   * Default: the container's CPU quota, else the available cores.
   */
  workers?: number
  /** Port every worker listens on (SO_REUSEPORT). 0 picks a free port. Default 3000. */
  port?: number
  /** Host every worker listens on. Default '0.0.0.0'. */
  host?: string
  /** Port of the control server (/healthz, /readyz, /status, /metrics); false disables it. Default 9091. */
  controlPort?: number | false
  /** Host of the control server. Default '127.0.0.1' (use '0.0.0.0' for Kubernetes probes). */
  controlHost?: string
  /** Longest time to finish in-flight requests when draining a worker or shutting down, in ms. Default 10000. */
  shutdownTimeout?: number
  /** Longest time a worker may take from spawn to listening, in ms. Default 60000. */
  startTimeout?: number
  /** A worker whose event loop has not ticked for this long counts as not ready, in ms; at least 200 (four heartbeats). Default 1000. */
  heartbeatTimeout?: number
  /** A worker whose event loop has not ticked for this long is replaced, in ms. Default 10000. */
  stallTimeout?: number
  /** A worker whose heap use passes this fraction of its heap limit is replaced. Default 0.9. */
  heapLimitRatio?: number
  /** Old-generation heap limit of each worker in MB (Worker resourceLimits), at least 32. Default: V8's. */
  maxHeapMb?: number
  /**
   * Young-generation size of each worker in MB (Worker resourceLimits): smaller means
   * shorter but more frequent minor-GC pauses. Default 96 (32 MB semi-spaces), or V8's own
   * size where that is smaller; 0 leaves the size to V8 (192 MB on a 64-bit machine with a
   * few GB of memory).
   */
  youngGenerationMb?: number
  /**
   * Let V8 shrink the heap of a worker that idles (its memory reducer: after about 8 s of
   * little allocation it runs full collections and gives memory back). The first seconds of
   * load after that run many more full collections while the heap grows again, so a surge
   * after a quiet spell is served slower. A process-wide V8 switch, set as each worker
   * starts. Default false.
   */
  memoryReducer?: boolean
  /**
   * Let V8 run each minor GC (scavenge) on helper threads beside the worker, as it does by
   * default. The helpers are one pool for the whole process, shared by every worker: with
   * every core busy rendering, a worker waits for helpers that are queued behind the other
   * workers' tasks, and its core idles meanwhile. false scavenges on each worker's own
   * thread: more throughput at full load, but longer pauses and more shedding under bursts
   * below capacity (bench/README.md, Profile findings). A process-wide V8 switch
   * (`--no-parallel-scavenge`) set as the workers start; true leaves V8's own setting.
   * Default true.
   */
  parallelScavenge?: boolean
  /**
   * Even out the load between workers: a worker clearly busier than another closes one of
   * its keep-alive connections now and then, and the kernel deals the reconnection out
   * again. Default true.
   */
  balanceConnections?: boolean
  /** Ready workers needed for /readyz to answer 200. Default: half the workers, rounded up. */
  minReadyWorkers?: number
  /** First restart delay after a crash, in ms; doubles per consecutive crash. Default 100. */
  restartDelay?: number
  /** Longest restart delay, in ms. Default 10000. */
  maxRestartDelay?: number
  /** Install SIGTERM/SIGINT (graceful shutdown) and SIGHUP (rolling restart) handlers. Default true. */
  handleSignals?: boolean
  /** Exit the process after a signal-triggered shutdown. Default: same as handleSignals. */
  exitOnShutdown?: boolean
  /** Directory relative paths are resolved from. Default process.cwd(). */
  cwd?: string
  /** Extra environment variables for the workers (on top of process.env). */
  env?: Record<string, string>
  /**
   * Resources created once in the main thread and handed to every worker, restarted ones
   * included (e.g. a SharedArrayBuffer). Read them in a worker with `getSharedResource(name)`.
   * Each must be structured-cloneable.
   */
  shared?: Record<string, unknown>
  /** Extra control-server routes, keyed 'METHOD /path'. */
  controlRoutes?: Record<string, ControlHandler>
  /**
   * How requests reach the renders. 'reusePort': `workers` Fastify worker threads share the
   * port (SO_REUSEPORT, Linux). 'pool': one Fastify worker thread owns the port and the
   * framework adapters render in a pool of `workers` threads (any OS; the worker gets
   * SPINDLE_POOL_THREADS). 'auto' (default): reusePort where the OS has it, else pool.
   */
  mode?: ModeOption
  /** Where supervisor events go (pino-compatible). Default: silent. */
  logger?: SupervisorLogger
  /** Load shedding in every worker (docs/overload.md); false turns it off. Default: on, with its defaults. */
  shedding?: LoadSheddingOptions | false
  /**
   * Request metrics (duration and queue-delay histograms, renders, cache outcomes) kept by
   * every worker and served, per worker and summed, on the control port's /metrics
   * (docs/runtime.md#metrics). false removes their hooks from the request path. Default: true
   * while the control port is on; off with `controlPort: false`, where no one could read them.
   */
  metrics?: boolean
  /**
   * A worker started to replace another (rolling restart, crash, heap limit, stall) first
   * sends `requests` requests through the app for each of `paths`, one after another (one
   * per render pool thread at once where the app renders in a pool), until done or
   * `timeout` ms passed, and only then listens: its JIT and the framework's caches are warm
   * when traffic comes, and the old worker serves meanwhile. The requests carry
   * `x-spindle-warmup: 1` and `cache-control: no-cache`; their answers are discarded. false
   * turns it off. Default `{ paths: ['/'], requests: 20, timeout: 5000 }`; in pool mode, where
   * the replacement takes all the traffic at once, without `requests` it goes on until each
   * pool thread has rendered 100 times.
   */
  warmup?: WarmupOptions | false
  /**
   * The fleet cache (docs/fleet.md): `url` of a Redis/Valkey server shared by every process
   * of the app, behind the shared-memory cache; the other keys are @spindle/cache fleet
   * options. Default: the SPINDLE_CACHE_URL environment variable; with neither, no fleet tier.
   */
  cache?: { url?: string, [option: string]: unknown }
}

export interface WarmupOptions {
  /**
   * Paths to request (GET), each starting with '/'. Default: '/' and the pages the app's
   * framework adapters find in its build (static page routes, at most 16; see
   * docs/runtime.md#warm-up); given, only these.
   */
  paths?: string[]
  /** Requests per path. Default 20. */
  requests?: number
  /** Longest time the warm-up may take, in ms. Default 5000. */
  timeout?: number
}

export interface ResolvedWarmup {
  readonly paths: readonly string[]
  /** Whether the pages the app's adapters announce (addWarmupPaths) join `paths`: `paths` was not given. */
  readonly appPaths: boolean
  /** Rounds of requests over `paths`. */
  readonly requests: number
  /** Renders each pool thread does at least (more rounds where needed); 0: `requests` rounds. */
  readonly perThread: number
  readonly timeout: number
}

export interface ResolvedOptions {
  readonly appPath: string
  readonly appOptions: Record<string, unknown>
  /** Fastify worker threads the supervisor runs: `workers` in reusePort mode, 1 in pool mode. */
  readonly workers: number
  /** Render pool threads the one worker's adapters start (pool mode), else 0. */
  readonly poolThreads: number
  readonly port: number
  readonly host: string
  readonly controlPort: number | false
  readonly controlHost: string
  readonly shutdownTimeout: number
  readonly startTimeout: number
  readonly heartbeatTimeout: number
  readonly stallTimeout: number
  readonly heapLimitRatio: number
  readonly maxHeapMb: number | undefined
  readonly youngGenerationMb: number
  readonly memoryReducer: boolean
  readonly parallelScavenge: boolean
  readonly balanceConnections: boolean
  readonly minReadyWorkers: number
  readonly restartDelay: number
  readonly maxRestartDelay: number
  readonly handleSignals: boolean
  readonly exitOnShutdown: boolean
  readonly env: Readonly<Record<string, string>>
  readonly shared: Readonly<Record<string, unknown>>
  readonly controlRoutes: Readonly<Record<string, ControlHandler>>
  readonly mode: Mode
  /** Why this mode (logged at start-up). */
  readonly modeReason: string
  readonly logger: SupervisorLogger
  readonly shedding: ResolvedSheddingOptions | false
  readonly metrics: boolean
  readonly warmup: ResolvedWarmup | false
  /** The fleet cache: its URL, where the URL came from (for messages) and its other options; undefined without one. */
  readonly cache: Readonly<{ url: string, source: string, options: Readonly<Record<string, unknown>> }> | undefined
}

const checkServeOptions = optionChecker(serveSchema, fail, { URL })

/** `cache.url`, else SPINDLE_CACHE_URL; the URL itself is checked by @spindle/cache when the fleet starts. */
function resolveCache (input: ServeOptions['cache']): ResolvedOptions['cache'] {
  const { url, ...options } = input ?? {}
  const env = process.env.SPINDLE_CACHE_URL
  if (typeof url === 'string') return Object.freeze({ url, source: 'cache.url', options: Object.freeze(options) })
  if (env !== undefined && env !== '') return Object.freeze({ url: env, source: 'SPINDLE_CACHE_URL', options: Object.freeze(options) })
  return undefined
}

/**
 * In pool mode, unless `warmup.requests` is given, the warm-up goes round the paths until
 * each pool thread has rendered this many times (at least the 20 rounds of the default). A
 * replacement there is the only worker and takes every connection at once: after 20 renders
 * a pool thread still rendered the React Router example's page (one warm-up path) 2-5 times
 * slower than when warm, the pool fell behind the next second's requests, and a rolling
 * restart at half capacity shed 52 and 192 of about 3,650 requests in two of eight rounds of
 * `bench/overload/sighup.mjs --config spindle-pool`; with 100 none in ten. Counted per
 * thread, not per path: the Next.js example warms four pages, and 100 rounds of them took
 * the whole 5 s timeout with both threads busy, starving the worker that still served.
 */
const POOL_WARM_RENDERS = 100

function resolveWarmup (input: WarmupOptions | false | undefined, mode: Mode): ResolvedWarmup | false {
  if (input === false) return false
  return Object.freeze({
    paths: Object.freeze([...input?.paths ?? ['/']]),
    appPaths: input?.paths === undefined,
    requests: input?.requests ?? 20,
    perThread: mode === 'pool' && input?.requests === undefined ? POOL_WARM_RENDERS : 0,
    timeout: input?.timeout ?? 5000,
  })
}

/**
 * Checks every option against the schema (option-schema.ts) and their relations, fills
 * defaults, and returns a frozen copy. Throws SPINDLE_RUNTIME_INVALID_OPTION.
 * `v8YoungGenerationMb`: the young-generation size V8 would give a worker on its own, which
 * caps the default of `youngGenerationMb`.
 */
export function resolveOptions (input: ServeOptions, v8YoungGenerationMb?: number): ResolvedOptions {
  checkServeOptions(input)
  checkCloneable(input.appOptions, 'appOptions')
  checkCloneable(input.shared, 'shared')

  const cwd = input.cwd ?? process.cwd()
  let appPath: string
  if (input.app instanceof URL) {
    if (input.app.protocol !== 'file:') fail(`app must be a path or a file: URL, got ${input.app.href}`)
    appPath = fileURLToPath(input.app)
  } else {
    appPath = input.app.startsWith('file:') ? fileURLToPath(input.app) : (isAbsolute(input.app) ? input.app : resolve(cwd, input.app))
  }

  const threads = input.workers ?? defaultWorkerCount()
  const { mode, reason: modeReason } = resolveMode(input.mode)
  const workers = mode === 'pool' ? 1 : threads
  const controlPort = input.controlPort ?? 9091
  const youngGenerationMb = input.youngGenerationMb ?? defaultYoungGenerationMb(v8YoungGenerationMb)

  const minReadyWorkers = input.minReadyWorkers ?? Math.ceil(workers / 2)
  if (minReadyWorkers > workers) {
    fail(mode === 'pool'
      ? `minReadyWorkers must be 1 in pool mode (one Fastify worker), got ${minReadyWorkers}`
      : `minReadyWorkers must be at most workers (${workers}), got ${minReadyWorkers}`)
  }
  const heartbeatTimeout = input.heartbeatTimeout ?? 1000
  const stallTimeout = input.stallTimeout ?? 10_000
  if (stallTimeout < heartbeatTimeout) {
    fail(`stallTimeout (${stallTimeout}) must be at least heartbeatTimeout (${heartbeatTimeout})`)
  }
  const restartDelay = input.restartDelay ?? 100
  const maxRestartDelay = input.maxRestartDelay ?? 10_000
  if (maxRestartDelay < restartDelay) {
    fail(`maxRestartDelay (${maxRestartDelay}) must be at least restartDelay (${restartDelay})`)
  }
  const handleSignals = input.handleSignals ?? true

  return Object.freeze({
    appPath,
    appOptions: Object.freeze({ ...input.appOptions }),
    workers,
    poolThreads: mode === 'pool' ? threads : 0,
    port: input.port ?? 3000,
    host: input.host ?? '0.0.0.0',
    controlPort,
    controlHost: input.controlHost ?? '127.0.0.1',
    shutdownTimeout: input.shutdownTimeout ?? 10_000,
    startTimeout: input.startTimeout ?? 60_000,
    heartbeatTimeout,
    stallTimeout,
    heapLimitRatio: input.heapLimitRatio ?? 0.9,
    maxHeapMb: input.maxHeapMb,
    youngGenerationMb,
    memoryReducer: input.memoryReducer ?? false,
    parallelScavenge: input.parallelScavenge ?? true,
    balanceConnections: input.balanceConnections ?? true,
    minReadyWorkers,
    restartDelay,
    maxRestartDelay,
    handleSignals,
    exitOnShutdown: input.exitOnShutdown ?? handleSignals,
    env: Object.freeze({ ...input.env }),
    shared: Object.freeze({ ...input.shared }),
    controlRoutes: Object.freeze({ ...input.controlRoutes }),
    mode,
    modeReason,
    logger: input.logger ?? silentLogger,
    shedding: input.shedding === false ? false : resolveSheddingOptions(input.shedding, 'shedding.'),
    // Without the control port nothing reads them: the workers keep none unless asked to.
    metrics: input.metrics ?? controlPort !== false,
    warmup: resolveWarmup(input.warmup, mode),
    cache: resolveCache(input.cache),
  })
}
