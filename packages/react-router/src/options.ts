import { existsSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RouterContextProvider, ServerBuild } from 'react-router'
import { SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND, SPINDLE_REACT_ROUTER_INVALID_OPTION } from './errors.ts'

export type BuildOption = string | ServerBuild | (() => ServerBuild | Promise<ServerBuild>)

export interface ReactRouterAdapterOptions {
  /** Path of build/server/index.js, a ServerBuild, or a function returning one. */
  build: BuildOption
  /** Returns the RouterContextProvider loaders and actions receive as `context`. */
  getLoadContext?: (request: FastifyRequest, reply: FastifyReply) => RouterContextProvider | Promise<RouterContextProvider>
  /** 'production' or 'development'. Default: NODE_ENV === 'development' ? 'development' : 'production'. */
  mode?: 'production' | 'development'
  /** Folder of the client build. Default: build/client beside build/server when `build` is a path, else none. */
  clientDir?: string | false
  /** max-age in seconds for client files outside assets/ (hashed assets are immutable for a year). Default 3600. */
  staticMaxAge?: number
}

export interface ResolvedOptions {
  readonly build: BuildOption
  readonly getLoadContext: ReactRouterAdapterOptions['getLoadContext']
  readonly mode: 'production' | 'development'
  readonly clientDir: string | undefined
  readonly staticMaxAge: number
}

const KNOWN = new Set(['build', 'getLoadContext', 'mode', 'clientDir', 'staticMaxAge'])

function fail (message: string): never {
  throw new SPINDLE_REACT_ROUTER_INVALID_OPTION(message)
}

export function resolveAdapterOptions (input: ReactRouterAdapterOptions): ResolvedOptions {
  if (typeof input !== 'object' || input === null) fail('options must be an object with a `build`')
  for (const key of Object.keys(input)) if (!KNOWN.has(key)) fail(`unknown option ${JSON.stringify(key)}`)
  let build = input.build
  let clientDir: string | undefined
  if (typeof build === 'string') {
    if (build.length === 0) fail('build must be the path of build/server/index.js, a ServerBuild or a function, got ""')
    build = isAbsolute(build) ? build : resolve(build)
    if (!existsSync(build)) throw new SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND(build)
    clientDir = join(dirname(dirname(build)), 'client')
  } else if (typeof build !== 'function' && (typeof build !== 'object' || build === null)) {
    fail(`build must be the path of build/server/index.js, a ServerBuild or a function, got ${typeof build}`)
  }
  if (input.getLoadContext !== undefined && typeof input.getLoadContext !== 'function') {
    fail(`getLoadContext must be a function, got ${typeof input.getLoadContext}`)
  }
  if (input.mode !== undefined && input.mode !== 'production' && input.mode !== 'development') {
    fail(`mode must be 'production' or 'development', got ${JSON.stringify(input.mode)}`)
  }
  if (input.clientDir === false) clientDir = undefined
  else if (input.clientDir !== undefined) {
    if (typeof input.clientDir !== 'string' || input.clientDir.length === 0) fail(`clientDir must be a folder path or false, got ${JSON.stringify(input.clientDir)}`)
    clientDir = resolve(input.clientDir)
  }
  const staticMaxAge = input.staticMaxAge ?? 3600
  if (typeof staticMaxAge !== 'number' || !Number.isInteger(staticMaxAge) || staticMaxAge < 0) {
    fail(`staticMaxAge must be a whole number of seconds, got ${JSON.stringify(staticMaxAge)}`)
  }
  return Object.freeze({
    build,
    getLoadContext: input.getLoadContext,
    mode: input.mode ?? (process.env.NODE_ENV === 'development' ? 'development' : 'production'),
    clientDir: clientDir && existsSync(clientDir) ? clientDir : undefined,
    staticMaxAge,
  })
}
