import type { IncomingMessage } from 'node:http'

/**
 * Next's custom server once prepared: its `server` is a NextServer, whose own `server` is the
 * dev server with the app's loaded config. None of it is public API.
 */
interface PreparedNext {
  server?: { server?: { nextConfig?: { basePath?: string, assetPrefix?: string } } }
}

/**
 * The path prefix of Next's HMR websocket: the path of `assetPrefix` when there is one, else
 * `basePath`, as Next 16's dev server decides (next/dist/server/lib/router-server.js).
 */
export function hmrPrefix (config: { basePath?: string, assetPrefix?: string }): string {
  const asset = (config.assetPrefix ?? '').replace(/^\/+|\/+$/g, '')
  if (!asset) return config.basePath ?? ''
  return URL.canParse(asset) ? new URL(asset).pathname.replace(/\/$/, '') : `/${asset}`
}

function loadedConfig (app: unknown): { basePath?: string, assetPrefix?: string } | undefined {
  try {
    return (app as PreparedNext).server?.server?.nextConfig
  } catch {
    // The getter throws until prepare() has run.
    return undefined
  }
}

/** Whether Next's dev server takes this upgrade request as its HMR websocket. */
export function isNextHmr (app: unknown, req: IncomingMessage): boolean {
  const config = loadedConfig(app)
  const target = req.url ?? ''
  if (config) return target.startsWith(`${hmrPrefix(config)}/_next/hmr`)
  // A Next whose internals moved: the path its HMR client connects to, whatever the prefix.
  return URL.parse(`http://localhost${target}`)?.pathname.endsWith('/_next/hmr') ?? false
}
