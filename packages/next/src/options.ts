import { existsSync, statSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { isMainThread, workerData } from 'node:worker_threads'
import { SPINDLE_NEXT_INVALID_OPTION, SPINDLE_NEXT_NO_BUILD } from './errors.ts'

export interface NextAdapterOptions {
  /** Folder of the Next.js app (where next.config and .next live). Relative paths resolve from process.cwd(). */
  dir: string
  /** Run Next's dev server (compiles on demand, HMR). Default false. */
  dev?: boolean
  /** Hide Next's own start-up messages. Default true. */
  quiet?: boolean
  /**
   * Render pool threads: 0 renders in the thread that runs Fastify; N > 0 runs Next in N
   * piscina threads while this thread keeps the sockets and the hooks (docs/pool-mode.md).
   * Absent: the SPINDLE_POOL_THREADS environment variable when it is a positive integer
   * (`spindle start --mode pool` sets it), else 0.
   */
  threads?: number
  /** Renders one pool thread runs at once. Default 4. */
  threadConcurrency?: number
  /** ms a request may wait for a free pool slot before it is answered 503. Default 1000. */
  maxBacklog?: number
  /** ms a pool thread may stay fully busy before it is ended and replaced; 0 = never. Default 10000. */
  hangTimeout?: number
  /**
   * The host name Next puts in the URLs it builds (`request.url` in route handlers and
   * the proxy). Default: the host a Spindle worker listens on, else 'localhost'.
   */
  hostname?: string
  /** The port Next puts in those URLs. Default: the port a Spindle worker listens on, else PORT, else the port Fastify binds, given to Next once it listens. */
  port?: number
}

export interface ResolvedNextAdapterOptions {
  readonly dir: string
  readonly dev: boolean
  readonly quiet: boolean
  readonly threads: number
  readonly threadConcurrency: number
  readonly maxBacklog: number
  readonly hangTimeout: number
  readonly hostname: string
  readonly port: number
  /** False when no port was given or found: the adapter gives Next the port Fastify listens on once it does. */
  readonly portKnown: boolean
}

const KNOWN = new Set(['dir', 'dev', 'quiet', 'threads', 'threadConcurrency', 'maxBacklog', 'hangTimeout', 'hostname', 'port'])

function fail (message: string): never {
  throw new SPINDLE_NEXT_INVALID_OPTION(message)
}

/** Checks the options before Next starts; a production app must have been built. */
export function resolveNextOptions (input: NextAdapterOptions): ResolvedNextAdapterOptions {
  if (typeof input !== 'object' || input === null) fail('options must be an object with a `dir`')
  for (const key of Object.keys(input)) if (!KNOWN.has(key)) fail(`unknown option ${JSON.stringify(key)}`)
  if (typeof input.dir !== 'string' || input.dir.length === 0) fail(`dir must be the path of a Next.js app folder, got ${JSON.stringify(input.dir)}`)
  const dir = isAbsolute(input.dir) ? input.dir : resolve(input.dir)
  if (!existsSync(dir) || !statSync(dir).isDirectory()) fail(`dir must be an existing folder, got ${JSON.stringify(dir)}`)
  for (const name of ['dev', 'quiet'] as const) {
    if (input[name] !== undefined && typeof input[name] !== 'boolean') fail(`${name} must be a boolean, got ${JSON.stringify(input[name])}`)
  }
  const dev = input.dev ?? false
  if (!dev && !existsSync(join(dir, '.next', 'BUILD_ID'))) throw new SPINDLE_NEXT_NO_BUILD(dir)
  const threads = input.threads === undefined ? (dev ? 0 : envThreads()) : count(input.threads, 'threads', 0)
  if (threads > 0 && dev) fail('threads is for a production build: with dev: true Next renders in the thread that runs Fastify')
  if (input.hostname !== undefined && (typeof input.hostname !== 'string' || input.hostname.length === 0)) fail(`hostname must be a non-empty string, got ${JSON.stringify(input.hostname)}`)
  if (input.port !== undefined) count(input.port, 'port', 1)
  if (input.port !== undefined && input.port > 65_535) fail(`port must be an integer from 1 to 65535, got ${input.port}`)
  const listening = runtimeAddress()
  const port = input.port ?? listening?.port ?? envPort()
  return Object.freeze({
    dir,
    dev,
    quiet: input.quiet ?? true,
    threads,
    threadConcurrency: count(input.threadConcurrency ?? 4, 'threadConcurrency', 1),
    maxBacklog: count(input.maxBacklog ?? 1000, 'maxBacklog', 1),
    hangTimeout: count(input.hangTimeout ?? 10_000, 'hangTimeout', 0),
    hostname: input.hostname ?? listening?.host ?? 'localhost',
    port: port ?? 3000,
    portKnown: port !== undefined,
  })
}

function count (value: unknown, name: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) fail(`${name} must be an integer from ${min}, got ${JSON.stringify(value)}`)
  return value
}

/** `spindle start --mode pool` runs one Fastify worker and tells it the pool size here. */
function envThreads (): number {
  const n = Number(process.env.SPINDLE_POOL_THREADS)
  return Number.isInteger(n) && n > 0 ? n : 0
}

function envPort (): number | undefined {
  const n = Number(process.env.PORT)
  return Number.isInteger(n) && n > 0 && n <= 65_535 ? n : undefined
}

/** Where the Spindle worker running this code listens (its workerData), if it is one. */
function runtimeAddress (): { host: string, port: number } | undefined {
  if (isMainThread) return undefined
  const d = workerData as { kind?: unknown, host?: unknown, port?: unknown } | null
  if (d?.kind !== 'spindle-worker' || typeof d.host !== 'string' || typeof d.port !== 'number' || d.port <= 0) return undefined
  return { host: d.host, port: d.port }
}
