import { existsSync, statSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { isMainThread, workerData } from 'node:worker_threads'
import { optionChecker } from '@spindle/options'
import { POOL_DEFAULTS, poolThreadsFromEnv } from '@spindle/runtime/pool'
import { SPINDLE_NEXT_INVALID_OPTION, SPINDLE_NEXT_NO_BUILD } from './errors.ts'
import { nextAdapterSchema } from './option-schema.ts'

export interface NextAdapterOptions {
  /** Folder of the Next.js app (where next.config and .next live). Relative paths resolve from process.cwd(). */
  dir: string
  /** Run Next's dev server (compiles on demand, HMR). Default false. */
  dev?: boolean
  /** Hide Next's own start-up messages. Default true. */
  quiet?: boolean
  /**
   * With `threads: 0` outside dev mode: the pages take turns in the thread that runs Fastify
   * (two at a time, first come first served; docs/overload.md#shedding-off) unless the server
   * already has @spindle/runtime's admission or render turns. Default true.
   */
  renderTurns?: boolean
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
  /** ms a pool thread's event loop may go without turning (an endless loop in a render) before the thread is ended and replaced; 0 = never. Default 10000. */
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
  readonly renderTurns: boolean
  readonly threads: number
  readonly threadConcurrency: number
  readonly maxBacklog: number
  readonly hangTimeout: number
  readonly hostname: string
  readonly port: number
  /** False when no port was given or found: the adapter gives Next the port Fastify listens on once it does. */
  readonly portKnown: boolean
}

function fail (message: string): never {
  throw new SPINDLE_NEXT_INVALID_OPTION(message)
}

const checkOptions = optionChecker(nextAdapterSchema, fail)

/** Checks the options against the schema (option-schema.ts) before Next starts; a production app must have been built. */
export function resolveNextOptions (input: NextAdapterOptions): ResolvedNextAdapterOptions {
  checkOptions(input)
  const dir = isAbsolute(input.dir) ? input.dir : resolve(input.dir)
  if (!existsSync(dir) || !statSync(dir).isDirectory()) fail(`dir must be an existing folder, got ${JSON.stringify(dir)}`)
  const dev = input.dev ?? false
  if (!dev && !existsSync(join(dir, '.next', 'BUILD_ID'))) throw new SPINDLE_NEXT_NO_BUILD(dir)
  const threads = input.threads ?? (dev ? 0 : poolThreadsFromEnv())
  if (threads > 0 && dev) fail('threads is for a production build: with dev: true Next renders in the thread that runs Fastify')
  const listening = runtimeAddress()
  const port = input.port ?? listening?.port ?? envPort()
  return Object.freeze({
    dir,
    dev,
    quiet: input.quiet ?? true,
    renderTurns: input.renderTurns ?? true,
    threads,
    threadConcurrency: input.threadConcurrency ?? POOL_DEFAULTS.threadConcurrency,
    maxBacklog: input.maxBacklog ?? POOL_DEFAULTS.maxBacklog,
    hangTimeout: input.hangTimeout ?? POOL_DEFAULTS.hangTimeout,
    hostname: input.hostname ?? listening?.host ?? 'localhost',
    port: port ?? 3000,
    portKnown: port !== undefined,
  })
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
