import { pathToFileURL } from 'node:url'
import middie from '@fastify/middie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { createRequestHandler, type ServerBuild } from 'react-router'
import { SPINDLE_REACT_ROUTER_BUILD_INVALID } from './errors.ts'
import { resolveAdapterOptions, type BuildOption, type ReactRouterAdapterOptions } from './options.ts'
import { poolRender } from './pool-render.ts'
import { ClientFiles } from './static-files.ts'
import { startViteDev, type ViteDev } from './vite-dev.ts'
import { sendWebResponse, toWebRequest } from './web-request.ts'
import { addWarmupPaths, giveRenderTurns } from '@spindle/runtime/worker'
import { hmrUpgrades } from '@spindle/runtime/pool'
import { staticPages } from './warmup-pages.ts'

// OPTIONS is left out on purpose: a CORS plugin answers preflights, and two OPTIONS
// catch-alls would clash.
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']

async function loadBuild (build: BuildOption): Promise<ServerBuild> {
  const value = typeof build === 'string'
    ? await import(pathToFileURL(build).href) as ServerBuild
    : typeof build === 'function' ? await build() : build
  const label = typeof build === 'string' ? build : 'object'
  if (!value || typeof value !== 'object' || !value.routes || !value.entry) {
    throw new SPINDLE_REACT_ROUTER_BUILD_INVALID(label, 'expected the module react-router build writes to build/server/index.js')
  }
  return value
}

async function plugin (fastify: FastifyInstance, options: ReactRouterAdapterOptions): Promise<void> {
  const opts = resolveAdapterOptions(options)
  let vite: ViteDev | undefined
  let handle: ReturnType<typeof createRequestHandler> | undefined
  if (opts.threads > 0) {
    // Pool mode: the build is loaded in the pool threads, never here.
  } else if (opts.devRoot !== undefined) {
    const upgrades = hmrUpgrades(fastify.server, (req) => vite?.isHmrUpgrade(req) ?? false)
    vite = await startViteDev(opts.devRoot, upgrades.emitter)
    // preClose: the HMR websockets of open tabs would keep the server from closing, and
    // onClose runs only once it has. Vite itself closes last, after the requests in flight.
    fastify.addHook('preClose', async () => { upgrades.close() })
    fastify.addHook('onClose', async () => { await vite!.close() })
    // A function build is loaded again for every request: each one sees the latest edits.
    handle = createRequestHandler(vite.loadBuild, 'development')
  } else {
    // The build is imported once, at registration; a function build is called once too.
    const build = await loadBuild(opts.build!)
    handle = createRequestHandler(build, opts.mode)
    // Under spindle start, a worker that replaces another warms up with the build's static
    // pages (unless the configuration names its own warm-up paths).
    addWarmupPaths(staticPages(build))
  }

  const clientFiles = opts.clientDir ? await ClientFiles.index(opts.clientDir) : undefined
  const inThread = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (clientFiles && (request.method === 'GET' || request.method === 'HEAD')) {
      if (await clientFiles.serve(request.url.split('?')[0]!, opts.staticMaxAge, request, reply)) return
    }
    const context = opts.getLoadContext ? await opts.getLoadContext(request, reply) : undefined
    const response = await handle!(toWebRequest(request, reply), context)
    await sendWebResponse(reply, response)
  }

  const render = opts.threads > 0 ? await poolRender(fastify, opts, clientFiles) : inThread
  // Renders in this thread take turns, as in a runtime worker (giveRenderTurns says why).
  if (opts.threads === 0 && vite === undefined && opts.renderTurns) await giveRenderTurns(fastify)

  // Encapsulated so that no body parser consumes request bodies on the framework's routes,
  // while the user's own routes keep Fastify's JSON and form parsing.
  await fastify.register(async function reactRouterRoutes (scope) {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    if (vite) {
      // Vite's own requests (modules, the HMR client, public/, pre-bundled dependencies) are
      // answered by its middlewares before the route runs; the rest fall through to render.
      // Only the framework's catch-all sees them: the user's routes stay Vite-free.
      await scope.register(middie)
      scope.use(vite.middlewares)
    }
    // rawBody: the framework reads the request stream itself; @spindle/runtime's body guard
    // leaves it to the framework's own limits (docs/security.md). render: the route renders
    // pages, so under @spindle/runtime with shedding off its requests still take turns
    // (docs/overload.md#shedding-off); not in dev mode, where renders wait on the bundler.
    const config = { rawBody: true, render: vite === undefined }
    scope.route({ method: METHODS, url: '/', handler: render, config })
    scope.route({ method: METHODS, url: '/*', handler: render, config })
  })
}

/**
 * Mounts a React Router framework-mode build in Fastify:
 * `await fastify.register(reactRouterAdapter, { build: './build/server/index.js' })`,
 * or the app's source through Vite's dev server with HMR: `{ dev: true, root }`.
 */
export const reactRouterAdapter = fp(plugin, { name: '@spindle/react-router', fastify: '5.x' })
