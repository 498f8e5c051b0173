import { existsSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RouterContextProvider, ServerBuild } from 'react-router'
import { optionChecker } from '@spindle/options'
import { POOL_DEFAULTS, poolThreadsFromEnv } from '@spindle/runtime/pool'
import { SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND, SPINDLE_REACT_ROUTER_INVALID_OPTION } from './errors.ts'
import { reactRouterAdapterSchema } from './option-schema.ts'

export type BuildOption = string | ServerBuild | (() => ServerBuild | Promise<ServerBuild>)

interface CommonOptions {
  /** Returns the RouterContextProvider loaders and actions receive as `context`. */
  getLoadContext?: (request: FastifyRequest, reply: FastifyReply) => RouterContextProvider | Promise<RouterContextProvider>
  /** 'production' or 'development'. Default: NODE_ENV === 'development' ? 'development' : 'production'. */
  mode?: 'production' | 'development'
  /** Folder of the client build. Default: build/client beside build/server when `build` is a path, else none. */
  clientDir?: string | false
  /** max-age in seconds for client files outside assets/ (hashed assets are immutable for a year). Default 3600. */
  staticMaxAge?: number
  /**
   * With `threads: 0` outside dev mode: the pages take turns in the thread that runs Fastify
   * (two at a time, first come first served; docs/overload.md#shedding-off) unless the server
   * already has @spindle/runtime's admission or render turns. Default true.
   */
  renderTurns?: boolean
  /**
   * Render pool threads: 0 renders in the thread that runs Fastify; N > 0 renders in N
   * piscina threads while this thread keeps the sockets and the hooks (docs/pool-mode.md).
   * Needs `build` as a path and no `getLoadContext`. Absent: the SPINDLE_POOL_THREADS
   * environment variable when it is a positive integer (`spindle start --mode pool` sets
   * it), else 0; ignored with `dev: true`.
   */
  threads?: number
  /** Renders one pool thread runs at once (loaders that await I/O overlap). Default 4. */
  threadConcurrency?: number
  /** ms a request may wait for a free pool slot before it is answered 503. Default 1000. */
  maxBacklog?: number
  /** ms a pool thread's event loop may go without turning (an endless loop in a render) before the thread is ended and replaced (its requests get 502); 0 = never. Default 10000. */
  hangTimeout?: number
}

/** Serves a production build. */
export interface BuildAdapterOptions extends CommonOptions {
  /** Path of build/server/index.js, a ServerBuild, or a function returning one. */
  build: BuildOption
  dev?: false
  root?: never
}

/** Serves the app's source through Vite's dev server, with HMR (no build needed). */
export interface DevAdapterOptions extends CommonOptions {
  dev: true
  /** Folder of the app (where vite.config and react-router.config live). Default: process.cwd(). */
  root?: string
  build?: never
}

export type ReactRouterAdapterOptions = BuildAdapterOptions | DevAdapterOptions

export interface ResolvedOptions {
  /** Undefined in dev mode, where Vite serves the build. */
  readonly build: BuildOption | undefined
  /** The app's folder for Vite, in dev mode only. */
  readonly devRoot: string | undefined
  readonly getLoadContext: ReactRouterAdapterOptions['getLoadContext']
  readonly mode: 'production' | 'development'
  readonly clientDir: string | undefined
  readonly staticMaxAge: number
  readonly renderTurns: boolean
  readonly threads: number
  readonly threadConcurrency: number
  readonly maxBacklog: number
  readonly hangTimeout: number
}

function fail (message: string): never {
  throw new SPINDLE_REACT_ROUTER_INVALID_OPTION(message)
}

const checkOptions = optionChecker(reactRouterAdapterSchema, fail)

/** Checks the options against the schema (option-schema.ts), then what the build, the folders and dev mode need. */
export function resolveAdapterOptions (input: ReactRouterAdapterOptions): ResolvedOptions {
  checkOptions(input)
  if (input.dev) return resolveDevOptions(input)
  if (input.root !== undefined) fail('root is the app folder for dev: true; a production build is given as `build`')
  let build = input.build
  let clientDir: string | undefined
  if (typeof build === 'string') {
    build = isAbsolute(build) ? build : resolve(build)
    if (!existsSync(build)) throw new SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND(build)
    clientDir = join(dirname(dirname(build)), 'client')
  } else if (build === undefined) {
    fail('build must be the path of build/server/index.js, a ServerBuild or a function, got undefined')
  }
  if (input.clientDir === false) clientDir = undefined
  else if (input.clientDir !== undefined) {
    clientDir = resolve(input.clientDir)
    // Named on purpose: a typo must not turn every asset request into a page's 404.
    if (!statSync(clientDir, { throwIfNoEntry: false })?.isDirectory()) fail(`clientDir must be a folder (the client build), got ${JSON.stringify(input.clientDir)}: ${clientDir} is not one`)
  }
  const threads = input.threads ?? poolThreadsFromEnv()
  // Named as the user set it: the option, or the variable pool mode set for them.
  const source = input.threads === undefined ? `threads (${threads}, from SPINDLE_POOL_THREADS; set threads: 0 to render in the thread that runs Fastify)` : 'threads'
  if (threads > 0 && typeof build !== 'string') fail(`${source} needs build to be the path of build/server/index.js: a ServerBuild object cannot cross threads`)
  if (threads > 0 && input.getLoadContext !== undefined) fail(`getLoadContext cannot be used with ${source}: it runs in the main thread and its value cannot cross threads`)
  return Object.freeze({
    build,
    devRoot: undefined,
    getLoadContext: input.getLoadContext,
    mode: input.mode ?? (process.env.NODE_ENV === 'development' ? 'development' : 'production'),
    clientDir: clientDir && existsSync(clientDir) ? clientDir : undefined,
    staticMaxAge: input.staticMaxAge ?? 3600,
    renderTurns: input.renderTurns ?? true,
    ...pool(input, threads),
  })
}

/** dev: true. Vite serves the server build, the modules and public/; there is no build to check. */
function resolveDevOptions (input: DevAdapterOptions): ResolvedOptions {
  if (input.build !== undefined) fail('build and dev: true exclude each other: in dev mode Vite builds the app from `root`')
  if (input.clientDir !== undefined) fail('clientDir is for a production build: in dev mode Vite serves the client files')
  if (input.mode !== undefined && input.mode !== 'development') fail(`mode must be 'development' (or left out) with dev: true, got ${JSON.stringify(input.mode)}`)
  const root = resolve(input.root ?? '.')
  if (!existsSync(root) || !statSync(root).isDirectory()) fail(`root must be an existing folder, got ${JSON.stringify(root)}`)
  if (input.threads) fail('threads is for a production build: in dev mode Vite renders in the thread that runs Fastify')
  return Object.freeze({
    build: undefined,
    devRoot: root,
    getLoadContext: input.getLoadContext,
    mode: 'development',
    clientDir: undefined,
    staticMaxAge: input.staticMaxAge ?? 3600,
    renderTurns: input.renderTurns ?? true,
    ...pool(input, 0),
  })
}

function pool (input: CommonOptions, threads: number): Pick<ResolvedOptions, 'threads' | 'threadConcurrency' | 'maxBacklog' | 'hangTimeout'> {
  return {
    threads,
    threadConcurrency: input.threadConcurrency ?? POOL_DEFAULTS.threadConcurrency,
    maxBacklog: input.maxBacklog ?? POOL_DEFAULTS.maxBacklog,
    hangTimeout: input.hangTimeout ?? POOL_DEFAULTS.hangTimeout,
  }
}
