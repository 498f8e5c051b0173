import { connect, createServer } from 'node:net'
import type { Server } from 'node:http'
import { once } from 'node:events'
import {
  SPINDLE_RUNTIME_CONTROL_PORT_IN_USE, SPINDLE_RUNTIME_INVALID_OPTION, SPINDLE_RUNTIME_NODE_TOO_OLD, SPINDLE_RUNTIME_PORT_IN_USE,
  SPINDLE_RUNTIME_STOPPED_DURING_START,
} from './errors.ts'
import { startCacheFleet } from './cache-fleet.ts'
import { createControlServer } from './control-server.ts'
import { resolveOptions, type ResolvedOptions, type ServeOptions } from './options.ts'
import type { Mode } from './mode.ts'
import { workerYoungGenerationMb } from './v8-young.ts'
import { Supervisor, type WorkerStatus } from './supervisor.ts'

export interface SpindleServer {
  /** The port every worker listens on. */
  readonly port: number
  readonly host: string
  /** A URL to reach the app (loopback when listening on every interface). */
  readonly url: string
  /** The control server's URL, or undefined when it is disabled. */
  readonly controlUrl: string | undefined
  /** Fastify worker threads: the rendering threads in reusePort mode, 1 in pool mode. */
  readonly workers: number
  /** How requests reach the renders ('auto' resolved). */
  readonly mode: Mode
  /** Render pool threads of the one worker in pool mode; 0 in reusePort mode. */
  readonly poolThreads: number
  /** Whether /readyz answers 200. */
  ready (): boolean
  status (): WorkerStatus[]
  /** Replaces every worker, one at a time, with no downtime. */
  restart (): Promise<void>
  /** Readiness false at once, then drains every worker within shutdownTimeout. Idempotent. */
  close (): Promise<void>
}

export function checkPlatform (): void {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
  if (major < 22 || (major === 22 && minor < 22)) throw new SPINDLE_RUNTIME_NODE_TOO_OLD(process.version)
}

function loopbackFor (host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1'
  if (host === '::') return '::1'
  return host
}

function urlFor (host: string, port: number): string {
  const h = loopbackFor(host)
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`
}

/**
 * With SO_REUSEPORT a second server on the same port joins the first instead of failing,
 * and silently takes half its traffic: refuse a port that already answers.
 */
async function assertPortFree (host: string, port: number): Promise<void> {
  const answered = await new Promise<boolean>((resolve) => {
    const socket = connect({ host: loopbackFor(host), port })
    const done = (value: boolean): void => { socket.destroy(); resolve(value) }
    socket.setTimeout(500, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
  if (answered) throw new SPINDLE_RUNTIME_PORT_IN_USE(host, port)
}

/** The control server's listen error, coded and naming the option at fault. */
function controlListenError (err: Error & { code?: string }, host: string, port: number): Error {
  if (err.code === 'EADDRINUSE') return new SPINDLE_RUNTIME_CONTROL_PORT_IN_USE(host, port, { cause: err })
  if (err.code === 'EACCES') return new SPINDLE_RUNTIME_INVALID_OPTION(`controlPort ${port} cannot be listened on: ${err.message}`, { cause: err })
  return new SPINDLE_RUNTIME_INVALID_OPTION(`controlHost ${JSON.stringify(host)} cannot be listened on: ${err.message}`, { cause: err })
}

/**
 * Listens on the control address for a moment: a host that does not resolve or is not this
 * machine's, or a port in use, fails the start before any worker loads the app.
 */
async function assertControlAddress (host: string, port: number): Promise<void> {
  await probeListen(host, port).catch((err: Error) => { throw controlListenError(err, host, port) })
}

/** Listens on `host` for a moment: an address that is not this machine's fails before any worker loads the app. */
async function assertHostListenable (host: string): Promise<void> {
  await probeListen(host, 0).catch((err: Error) => {
    throw new SPINDLE_RUNTIME_INVALID_OPTION(`host ${JSON.stringify(host)} cannot be listened on: ${err.message}`, { cause: err })
  })
}

async function probeListen (host: string, port: number): Promise<void> {
  const probe = createServer()
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject)
      probe.listen(port, host, resolve)
    })
  } finally {
    probe.close()
  }
}

/** Runs the app on `workers` threads that all listen on one port. Resolves when every worker listens. */
export async function serve (options: ServeOptions): Promise<SpindleServer> {
  checkPlatform()
  // Until the supervisor's handlers are in place (the option checks and the fleet tier take a
  // moment), a SIGTERM, SIGINT or SIGHUP is noted rather than left to Node's default, which
  // would end the process with no exit code.
  const held = heldSignals
  heldSignals = undefined
  const early = (options as ServeOptions | undefined)?.handleSignals === false ? (held?.stop(), undefined) : held ?? noteSignals()
  let resolved: ResolvedOptions
  let fleet: Awaited<ReturnType<typeof startCacheFleet>>
  try {
    const v8Young = (options as ServeOptions | undefined)?.youngGenerationMb === undefined ? await workerYoungGenerationMb() : undefined
    resolved = resolveOptions(options, v8Young)
    if (process.env.SPINDLE_POOL_THREADS !== undefined && process.env.SPINDLE_POOL_THREADS !== String(resolved.poolThreads)) {
      resolved.logger.warn({ SPINDLE_POOL_THREADS: process.env.SPINDLE_POOL_THREADS, poolThreads: resolved.poolThreads },
        'SPINDLE_POOL_THREADS in the environment is ignored: the runtime sets it for its workers (pool threads come from --workers in pool mode)')
    }
    resolved.logger.info({ mode: resolved.mode, reason: resolved.modeReason, workers: resolved.workers, poolThreads: resolved.poolThreads },
      resolved.mode === 'pool' ? 'pool mode: one Fastify worker, renders in a pool of threads' : 'reusePort mode: workers share the port')
    await assertHostListenable(resolved.host)
    if (resolved.port !== 0) await assertPortFree(resolved.host, resolved.port)
    if (resolved.controlPort !== false) await assertControlAddress(resolved.controlHost, resolved.controlPort)
    fleet = await startCacheFleet(resolved)
  } catch (err) {
    early?.stop()
    throw err
  }
  // The fleet tier's store and the link to its Redis client reach workers like any shared resource.
  const opts = fleet ? Object.freeze({ ...resolved, shared: Object.freeze({ ...resolved.shared, ...fleet.shared }) }) : resolved
  const supervisor = new Supervisor(opts)
  // Signals are handled from here on, start-up included: a SIGTERM while the workers start
  // stops those that did and exits, rather than leaving the process to Node's default.
  let stoppedBy: NodeJS.Signals | undefined
  let stopping: Promise<void> | undefined
  let close = (signal?: NodeJS.Signals): Promise<void> => {
    stoppedBy ??= signal
    stopping ??= (async () => {
      supervisor.beginShutdown()
      await supervisor.close()
      await fleet?.close()
    })()
    return stopping
  }
  let started = false
  const signals = installSignals(opts, supervisor, (signal) => close(signal), () => started)
  const removeSignals = signals.remove
  const noted = early?.stop()
  if (noted?.hup) opts.logger.warn({}, HUP_WHILE_STARTING)
  if (noted?.signal) {
    // Stopped before any worker started: nothing to start.
    signals.stop(noted.signal)
    await stopping
    removeSignals()
    throw new SPINDLE_RUNTIME_STOPPED_DURING_START(noted.signal)
  }
  // The control port listens before the workers load the app: a probe during a long start
  // reads /healthz 200 and /readyz 503 (Kubernetes counts a refused connection against the
  // pod's liveness), and /status shows the workers starting.
  let control: Server | undefined
  let controlUrl: string | undefined
  const closeControl = async (): Promise<void> => {
    if (!control) return
    control.closeAllConnections()
    await new Promise<void>((resolve) => control!.close(() => resolve()))
  }
  if (opts.controlPort !== false) {
    control = createControlServer(supervisor, opts.controlRoutes, () => ({
      pid: process.pid,
      // Known before the workers listen, unless port 0 leaves the first worker to pick it.
      url: supervisor.port === 0 ? null : urlFor(opts.host, supervisor.port),
      mode: opts.mode, poolThreads: opts.poolThreads, workers: opts.workers, uptimeMs: Math.round(process.uptime() * 1000),
    }), fleet ? () => fleet.agent.metrics() : undefined)
    try {
      control.listen(opts.controlPort, opts.controlHost)
      await once(control, 'listening')
    } catch (err) {
      removeSignals()
      await fleet?.close()
      throw controlListenError(err as Error, opts.controlHost, opts.controlPort)
    }
    const address = control.address()
    controlUrl = urlFor(opts.controlHost, typeof address === 'object' && address ? address.port : opts.controlPort)
  }
  try {
    await supervisor.start()
    started = true
    if (stoppedBy) {
      // The signal came as the last worker began to listen: stop all of them.
      await close()
      await closeControl()
      removeSignals()
      throw new SPINDLE_RUNTIME_STOPPED_DURING_START(stoppedBy)
    }
  } catch (err) {
    await closeControl()
    if (stoppedBy) {
      await stopping
      removeSignals()
      throw new SPINDLE_RUNTIME_STOPPED_DURING_START(stoppedBy, { cause: err })
    }
    removeSignals()
    await fleet?.close()
    const cause = (err as Error & { cause?: { code?: string } }).cause
    if (cause?.code === 'EADDRINUSE') throw new SPINDLE_RUNTIME_PORT_IN_USE(opts.host, opts.port, { cause: err })
    throw err
  }
  const port = supervisor.port
  const url = urlFor(opts.host, port)

  let closing: Promise<void> | undefined
  close = (): Promise<void> => {
    closing ??= (async () => {
      supervisor.beginShutdown()
      const { unfinished } = await supervisor.close()
      removeSignals()
      await fleet?.close()
      if (unfinished > 0) opts.logger.warn({ unfinished }, 'requests cut off by shutdownTimeout')
      await closeControl()
      opts.logger.info({}, 'stopped')
    })()
    return closing
  }


  return Object.freeze({
    port,
    host: opts.host,
    url,
    controlUrl,
    workers: opts.workers,
    mode: opts.mode,
    poolThreads: opts.poolThreads,
    ready: () => supervisor.isReady(),
    status: () => supervisor.status(),
    restart: async () => { await supervisor.rollingRestart() },
    close,
  })
}

let heldSignals: ReturnType<typeof noteSignals> | undefined

const HUP_WHILE_STARTING = 'SIGHUP while the workers start: ignored (the workers starting load the app as it is now)'

/**
 * From now until serve() starts, a SIGTERM or SIGINT is noted (serve() then stops at once),
 * and a SIGHUP too (serve() warns that it is ignored), instead of ending the process by Node's
 * default. The CLI calls it first thing: loading the config file and the first steps of
 * serve() take a moment, and a signal in that moment would otherwise kill the process with no
 * exit code.
 */
export function holdSignals (): void {
  heldSignals ??= noteSignals()
}

/**
 * Records the first SIGTERM or SIGINT, and whether a SIGHUP came, until stop(), which removes
 * the listeners and returns them.
 */
function noteSignals (): { stop: () => { signal: NodeJS.Signals | undefined, hup: boolean } } {
  let seen: NodeJS.Signals | undefined
  let hup = false
  const note = (signal: NodeJS.Signals): void => { seen ??= signal }
  const noteHup = (): void => { hup = true }
  process.on('SIGTERM', note)
  process.on('SIGINT', note)
  process.on('SIGHUP', noteHup)
  return {
    stop: () => {
      process.off('SIGTERM', note)
      process.off('SIGINT', note)
      process.off('SIGHUP', noteHup)
      return { signal: seen, hup }
    },
  }
}

/**
 * A stop signal this soon (ms) after the first is the same one again, not a second: a
 * terminal's Ctrl-C reaches every process of its foreground group, and a parent that passes
 * signals on (`node --watch`, a process manager) sends it again within milliseconds. Without
 * the window, `node --watch … spindle dev` exited 1 at once on every Ctrl-C, skipping the
 * drain. A person who presses Ctrl-C again to force the exit takes longer than this.
 */
export const SAME_SIGNAL_MS = 500

function installSignals (opts: ResolvedOptions, supervisor: Supervisor, close: (signal: NodeJS.Signals) => Promise<void>, started: () => boolean): { remove: () => void, stop: (signal: NodeJS.Signals) => void } {
  if (!opts.handleSignals) return { remove: () => {}, stop: () => {} }
  let shuttingDown = false
  let firstAt = 0
  const onStop = (signal: NodeJS.Signals): void => {
    if (shuttingDown) {
      if (performance.now() - firstAt < SAME_SIGNAL_MS) return
      opts.logger.warn({ signal }, 'second signal: exiting now')
      process.exit(1)
    }
    shuttingDown = true
    firstAt = performance.now()
    opts.logger.info({ signal, timeoutMs: opts.shutdownTimeout }, 'shutting down: finishing in-flight requests')
    close(signal).then(
      () => { if (opts.exitOnShutdown) process.exit(0) },
      (err: unknown) => {
        opts.logger.error({ err: (err as Error).message }, 'shutdown failed')
        if (opts.exitOnShutdown) process.exit(1)
      },
    )
  }
  const onHup = (): void => {
    if (!started()) {
      opts.logger.warn({}, HUP_WHILE_STARTING)
      return
    }
    opts.logger.info({}, 'SIGHUP: rolling restart')
    supervisor.rollingRestart().then(
      ({ replaced, failed, stopped }) => {
        if (stopped) opts.logger.info({ replaced, failed }, 'rolling restart cut short by shutdown')
        else if (failed > 0) opts.logger.warn({ replaced, failed }, 'rolling restart done, but replacements failed to start: those slots still run the previous app')
        else opts.logger.info({ replaced }, 'rolling restart done')
      },
      (err: unknown) => opts.logger.error({ err: (err as Error).message }, 'rolling restart failed'),
    )
  }
  process.on('SIGTERM', onStop)
  process.on('SIGINT', onStop)
  process.on('SIGHUP', onHup)
  return {
    remove: () => {
      process.off('SIGTERM', onStop)
      process.off('SIGINT', onStop)
      process.off('SIGHUP', onHup)
    },
    stop: onStop,
  }
}
