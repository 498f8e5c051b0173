import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { ServerBuild } from 'react-router'
import { SPINDLE_REACT_ROUTER_VITE_FAILED } from './errors.ts'

/** The parts of Vite's dev server the adapter uses (Vite stays the app's dependency). */
interface ViteDevServer {
  middlewares: (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void
  ssrLoadModule (url: string): Promise<Record<string, unknown>>
  ssrFixStacktrace (err: Error): void
  close (): Promise<void>
}

interface Vite {
  createServer (config: Record<string, unknown>): Promise<ViteDevServer>
}

export interface ViteDev {
  /** Vite's connect middlewares: modules, HMR client, public files, dependency bundles. */
  readonly middlewares: ViteDevServer['middlewares']
  /** The server build as it is now, with every edit since the last request applied. */
  loadBuild (): Promise<ServerBuild>
  close (): Promise<void>
}

// The module React Router's Vite plugin serves the whole server build under.
const SERVER_BUILD = 'virtual:react-router/server-build'

/**
 * Starts Vite's dev server in middleware mode for the app in `root` (its vite.config with
 * React Router's plugin, which leaves the rendering to a custom server in this mode). The HMR
 * websocket is answered on `server`, the Fastify server, so the app needs one port only.
 */
export async function startViteDev (root: string, server: Server): Promise<ViteDev> {
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
    dev = await vite.createServer({ root, appType: 'custom', server: { middlewareMode: true, hmr: { server } } })
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
    close: () => dev.close(),
  }
}
