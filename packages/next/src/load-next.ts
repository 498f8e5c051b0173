import type { IncomingMessage, ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import { join } from 'node:path'

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>

/** The part of next()'s custom server the adapter uses. */
export interface NextServer {
  prepare (): Promise<void>
  getRequestHandler (): RequestHandler
  close? (): Promise<void>
}

/** What next() takes here. hostname and port make the URLs Next builds (route handlers' request.url) name this server, not localhost:3000. */
export interface NextServerOptions { dir: string, dev: boolean, quiet: boolean, hostname: string, port: number, customServer: true, httpServer?: unknown }

/** Loads `next` from the app's folder, so the app's own copy (and its config) is used. */
export function loadNext (dir: string): (opts: NextServerOptions) => NextServer {
  const mod = createRequire(join(dir, 'package.json'))('next') as { default?: unknown }
  return (typeof mod === 'function' ? mod : mod.default) as (opts: object) => NextServer
}
