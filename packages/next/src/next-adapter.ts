import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { SPINDLE_NEXT_PREPARE_FAILED } from './errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on the adapter's routes: Next reads the request stream itself (see @spindle/runtime). */
    rawBody?: boolean
    /** Set on the adapter's routes outside dev mode: they render pages (see @spindle/runtime). */
    render?: boolean
  }
}
import { resolveNextOptions, type NextAdapterOptions, type ResolvedNextAdapterOptions } from './options.ts'
import { boundPort, setNextPort } from './listen-port.ts'
import { loadNext, type NextServer } from './load-next.ts'
import { isNextHmr } from './next-hmr.ts'
import { trackDevLeftovers } from './dev-leftovers.ts'
import { poolRender } from './pool-render.ts'
import { assertNextCanServe } from './request-guard.ts'
import { readStandaloneConfig, withStandaloneConfig } from './standalone.ts'
import { staticPages } from './warmup-pages.ts'
import { localeRootTest, varyOnLocale } from './locale-vary.ts'
import { warnIfCachePerThread } from './per-thread-cache.ts'
import { addWarmupPaths, giveRenderTurns } from '@spindle/runtime/worker'
import { hmrUpgrades, http1Headers } from '@spindle/runtime/pool'

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

declare module 'fastify' {
  interface FastifyInstance {
    /** The Next.js server the adapter mounted; undefined in pool mode (`threads`), where Next lives in the pool threads. */
    next: NextServer
  }
}

async function plugin (fastify: FastifyInstance, options: NextAdapterOptions): Promise<void> {
  const opts = resolveNextOptions(options)
  const render = opts.threads > 0 ? await poolRender(fastify, opts) : await inThreadRender(fastify, opts)
  // Under spindle start, a worker that replaces another warms up with the build's static
  // pages (unless the configuration names its own warm-up paths).
  if (!opts.dev) addWarmupPaths(staticPages(opts.dir))
  if (!opts.dev) warnIfCachePerThread(opts.dir, opts.threads)
  // httpCache (@spindle/cache) keys pages by build, so after a redeploy no worker serves
  // HTML that points at the old build's chunks. Checked once ready: either may register first.
  if (!opts.dev) {
    fastify.addHook('onReady', async () => {
      const cache = (fastify as { httpCache?: { setBuildId?: (id: string | undefined) => void } }).httpCache
      cache?.setBuildId?.(readFileSync(join(opts.dir, '.next', 'BUILD_ID'), 'utf8').trim())
    })
  }

  // Renders in this thread take turns, as in a runtime worker (giveRenderTurns says why).
  if (opts.threads === 0 && !opts.dev && opts.renderTurns) await giveRenderTurns(fastify)

  // Encapsulated, so the raw-body parser below applies to Next's routes only: the user's
  // own routes keep Fastify's JSON and form parsing.
  await fastify.register(async function nextRoutes (scope) {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    // rawBody: the framework reads the request stream itself; @spindle/runtime's body guard
    // leaves it to the framework's own limits (docs/security.md). render: the route renders
    // pages, so under @spindle/runtime with shedding off its requests still take turns
    // (docs/overload.md#shedding-off); not in dev mode, where renders wait on the bundler.
    const config = { rawBody: true, render: !opts.dev }
    scope.route({ method: METHODS, url: '/', handler: render, config })
    scope.route({ method: METHODS, url: '/*', handler: render, config })
  })
}

async function inThreadRender (fastify: FastifyInstance, opts: ResolvedNextAdapterOptions): Promise<(request: FastifyRequest, reply: FastifyReply) => Promise<void>> {
  // `output: 'standalone'`: `dir` may be the standalone tree itself, which has no next.config.
  const standalone = opts.dev ? undefined : readStandaloneConfig(opts.dir)
  // Next adds its upgrade listener to httpServer (else to the server of the first request it
  // handles) and leaves unanswered what it does not take. It gets the upgrades of Fastify's
  // server for its dev HMR websocket only; the others go to the app (@spindle/runtime's hmr-upgrades.ts).
  const upgrades = hmrUpgrades(fastify.server, (req) => opts.dev && isNextHmr(app, req))
  // Dev mode: what Next's dev server leaves running after close() (dev-leftovers.ts says why).
  const leftovers = opts.dev ? trackDevLeftovers(opts.dir) : undefined
  const app = loadNext(opts.dir)({ dir: opts.dir, dev: opts.dev, quiet: opts.quiet, hostname: opts.hostname, port: opts.port, customServer: true, httpServer: upgrades.emitter })
  try {
    await withStandaloneConfig(standalone, () => app.prepare())
  } catch (err) {
    await leftovers?.close()
    throw new SPINDLE_NEXT_PREPARE_FAILED(opts.dir, (err as Error).message, { cause: err })
  }
  const handle = app.getRequestHandler()
  // Answers to the root that Next gives by the visitor's locale (locale-vary.ts).
  const localeRoot = opts.dev ? undefined : localeRootTest(opts.dir)
  fastify.decorate('next', app)
  if (!opts.portKnown) {
    fastify.addHook('onListen', async () => {
      const port = boundPort(fastify)
      if (port !== undefined) setNextPort(app, port)
    })
  }
  // preClose: the HMR websockets of open tabs would keep the server from closing, and
  // onClose runs only once it has. Next itself closes last, after the requests in flight.
  fastify.addHook('preClose', async () => { upgrades.close() })
  fastify.addHook('onClose', async () => {
    await app.close?.()
    await leftovers?.close()
  })
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    assertNextCanServe(request)
    const res = reply.raw
    // Next writes to the raw response: headers already set on `reply` (by hooks or plugins)
    // would be lost at hijack, so they move to the raw response first.
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) res.setHeader(name, value as string | number | readonly string[])
    }
    reply.hijack()
    if (localeRoot?.(request.url)) varyOnLocale(res)
    if (request.raw.httpVersionMajor === 2) asHttp1Headers(request.raw)
    // HTTP/2's response has no _implicitHeader, which Next's compression calls to send the
    // head before its first compressed bytes: it is what HTTP/1's does.
    const h2 = res as typeof res & { _implicitHeader?: () => void }
    if (typeof h2._implicitHeader !== 'function') h2._implicitHeader = function () { this.writeHead(this.statusCode) }
    try {
      await handle(request.raw, res)
    } catch (err) {
      request.log.error({ err }, 'Next.js request handler failed')
      // A failure after Next started writing must still end the response, and so must one
      // whose 500 cannot be written either: a stream left open would stay in flight for ever.
      try {
        if (!res.headersSent) {
          res.statusCode = 500
          res.setHeader('content-type', 'text/plain; charset=utf-8')
          res.end('Internal Server Error')
        } else {
          res.destroy(err as Error)
        }
      } catch {
        res.destroy(err as Error)
      }
    }
  }
}

/**
 * Next reads an HTTP/1 request's headers: an object with a prototype (it calls
 * hasOwnProperty on it), a `host`, and no HTTP/2 pseudo-headers. Over HTTP/2 the request
 * shows Next such a copy; Node's own getters (method, url) read the originals.
 */
function asHttp1Headers (raw: FastifyRequest['raw']): void {
  Object.defineProperty(raw, 'headers', { value: http1Headers(raw.headers), configurable: true, enumerable: true, writable: true })
}

/**
 * Mounts a Next.js 16 app in Fastify: `await fastify.register(nextAdapter, { dir })`.
 * Routes the user registers, before or after, win over Next's catch-all.
 */
export const nextAdapter = fp(plugin, { name: '@spindle/next', fastify: '5.x' })
