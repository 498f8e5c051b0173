import type { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import { join, posix } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { ServerBuild } from 'react-router'
import { SPINDLE_REACT_ROUTER_VITE_FAILED } from './errors.ts'

/** The parts of Vite's dev server the adapter uses (Vite stays the app's dependency). */
interface ViteDevServer {
  middlewares: (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void
  ssrLoadModule (url: string): Promise<Record<string, unknown>>
  ssrFixStacktrace (err: Error): void
  close (): Promise<void>
  config: { base: string, server: { hmr?: boolean | { path?: string } } }
}

interface Vite {
  createServer (config: Record<string, unknown>): Promise<ViteDevServer>
}

export interface ViteDev {
  /** Vite's connect middlewares: modules, HMR client, public files, dependency bundles. */
  readonly middlewares: ViteDevServer['middlewares']
  /** The server build as it is now, with every edit since the last request applied. */
  loadBuild (): Promise<ServerBuild>
  /** Whether Vite's listener takes this upgrade request: its HMR websocket (or ping). */
  isHmrUpgrade (req: IncomingMessage): boolean
  close (): Promise<void>
}

// The module React Router's Vite plugin serves the whole server build under.
const SERVER_BUILD = 'virtual:react-router/server-build'

/**
 * Starts Vite's dev server in middleware mode for the app in `root` (its vite.config with
 * React Router's plugin, which leaves the rendering to a custom server in this mode). Vite takes
 * its HMR websocket from the 'upgrade' events of `upgrades`, which come from the Fastify server
 * (see @spindle/runtime's hmr-upgrades.ts), so the app needs one port only.
 */
export async function startViteDev (root: string, upgrades: EventEmitter): Promise<ViteDev> {
  let vite: Vite
  try {
    // Vite is loaded from the app's folder: its own copy, matching its vite.config.
    const entry = createRequire(join(root, 'package.json')).resolve('vite')
    vite = await import(pathToFileURL(entry).href) as Vite
  } catch (err) {
    throw new SPINDLE_REACT_ROUTER_VITE_FAILED(root, `vite cannot be loaded from there (${(err as Error).message})`, { cause: err })
  }
  let dev: ViteDevServer
  try {
    dev = await vite.createServer({ root, appType: 'custom', server: { middlewareMode: true, hmr: { server: upgrades } } })
  } catch (err) {
    throw new SPINDLE_REACT_ROUTER_VITE_FAILED(root, (err as Error).message, { cause: err })
  }
  return {
    middlewares: dev.middlewares,
    async loadBuild () {
      try {
        return await dev.ssrLoadModule(SERVER_BUILD) as unknown as ServerBuild
      } catch (err) {
        // Stack frames of the app's source files, not of Vite's transformed modules.
        if (err instanceof Error) dev.ssrFixStacktrace(err)
        throw err
      }
    },
    isHmrUpgrade: (req) => isViteHmr(req, hmrPath(dev.config)),
    close: () => dev.close(),
  }
}

// The protocols of Vite's HMR client and of its ping while it waits for a restarted server.
const HMR_PROTOCOLS = new Set(['vite-hmr', 'vite-ping'])

/** The path Vite answers its HMR websocket on: `base`, joined with `server.hmr.path` if set. */
function hmrPath (config: ViteDevServer['config']): string {
  const hmr = config.server.hmr
  const path = typeof hmr === 'object' ? hmr.path : undefined
  return path ? posix.join(config.base, path) : config.base
}

/** The test Vite's own upgrade listener applies: anything else it would leave unanswered. */
function isViteHmr (req: IncomingMessage, path: string): boolean {
  const protocol = req.headers['sec-websocket-protocol']
  if (protocol === undefined || !HMR_PROTOCOLS.has(protocol)) return false
  // Parsed as Vite parses it, so both agree on odd targets.
  return URL.parse(`http://localhost${req.url ?? ''}`)?.pathname === path
}
