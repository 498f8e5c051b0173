// With shedding off, the framework adapters' renders still take turns. Without a queue every
// request a worker reads starts rendering at once, so under a closed loop of 100 connections
// each worker interleaves some 50 Next.js renders: each page takes 50 renders' time, and
// their objects outlive the young generation. In the render queue they run two at a time
// (one while more arrives than the thread can do), first come first served, and more start
// whenever the loop idles (renders that wait for I/O). Nothing is shed: a render waits until
// its turn, however long. Measured on the Next.js example, 2 workers, closed loop of 100
// connections, 3 alternated rounds (docs/overload.md#shedding-off): 180 against 173 req/s,
// p99 0.7-0.8 s against 3.4-3.8 s; React Router 689 against 680 req/s, p99 0.2 s against 0.6 s.
//
// Only routes that declare themselves renders (`config: { render: true }`, which
// @spindle/next and @spindle/react-router set outside dev mode) get the hook, at route
// level: every other route pays nothing, and a route's own hooks (auth in onRequest or
// preHandler) run before it waits. Static files under the shedding defaults' prefixes, and
// renders served by a render pool in this thread (which admits its own), never wait here.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, preHandlerHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { AdmissionController } from './admission/controller.ts'
import { loopActiveMs, RenderQueue } from './admission/render-queue.ts'
import { kArrivedAt, type Stamped } from './admission/stamps.ts'
import { renderPoolRunning } from './pool/presence.ts'
import { resolveSheddingOptions } from './shed-options.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * true: the route renders a page (a framework adapter's catch-all). With shedding off,
     * its requests take turns in the worker's render queue (docs/overload.md#shedding-off).
     */
    render?: boolean
  }
}

async function plugin (fastify: FastifyInstance): Promise<void> {
  // The admission defaults: the controller still tells when more arrives than the thread
  // can do (then one render runs at a time), but no verdict of it is acted on.
  const defaults = resolveSheddingOptions({}, '', true)
  const queue = new RenderQueue(new AdmissionController({ budget: defaults.maxBacklog, target: defaults.overloadBacklog }, undefined, loopActiveMs), 0, undefined)
  const prefixes = defaults.staticPrefixes

  function takeTurn (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const url = request.url
    for (let i = 0; i < prefixes.length; i++) if (url.startsWith(prefixes[i]!)) { done(); return }
    if (renderPoolRunning()) { done(); return }
    const now = performance.now()
    queue.admit(reply, done as () => void, (request.raw as Stamped)[kArrivedAt] ?? now, now)
  }

  fastify.addHook('onRoute', (route) => {
    if (route.config?.render !== true) return
    const own = route.preHandler
    const hooks = own === undefined ? [] : Array.isArray(own) ? own : [own]
    route.preHandler = [...hooks, takeTurn as preHandlerHookHandler]
  })
}

/**
 * Runs the renders of routes with `config: { render: true }` through a render queue that
 * never sheds. The runtime's worker registers it when shedding is off.
 */
export const renderTurns = fp(plugin, { name: '@spindle/render-turns', fastify: '5.x' })

/**
 * For a framework adapter rendering in the thread that runs Fastify: gives its render routes
 * turns unless the server already has them (a runtime worker registers the admission or
 * render turns before the app) or the user turned them off. Register it before the routes.
 * In a plain Fastify server without turns, renders that never wait for I/O run every request
 * one turn of the event loop read, back to back, and libuv accepts one new connection per
 * turn: on the React Router example with 100 connections, 21 of them got no answer in 8 s
 * (docs/overload.md#new-connections).
 */
export async function giveRenderTurns (fastify: FastifyInstance): Promise<void> {
  if (fastify.hasPlugin('@spindle/load-shedding') || fastify.hasPlugin('@spindle/render-turns')) return
  await fastify.register(renderTurns)
}
