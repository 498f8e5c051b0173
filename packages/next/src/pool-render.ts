// Pool mode of the adapter: this thread keeps Fastify and its hooks; each request to Next's
// routes goes to a render pool thread (pool-thread.ts) that runs Next.
import { fileURLToPath } from 'node:url'
import { workerData } from 'node:worker_threads'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { RenderPool, requestHead } from '@spindle/runtime/pool'
import { DEFAULT_SHARED_NAME, SharedStore } from '@spindle/cache'
import { nextCacheStore } from './cache/store.ts'
import { assertNextCanServe } from './request-guard.ts'
import { boundPort } from './listen-port.ts'
import type { ResolvedNextAdapterOptions } from './options.ts'

/** ms the pool threads have for Next's prepare() (about 1.5 s each on two busy cores). */
const START_TIMEOUT = 120_000

export async function poolRender (fastify: FastifyInstance, opts: ResolvedNextAdapterOptions): Promise<(request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>> {
  // The port Fastify binds, for threads that started before it listened (listen-port.ts).
  const boundPortCell = opts.portKnown ? undefined : new Int32Array(new SharedArrayBuffer(4))
  const pool = await RenderPool.start({
    filename: fileURLToPath(new URL('./pool-thread.js', import.meta.url)),
    threads: opts.threads,
    concurrency: opts.threadConcurrency,
    options: { dir: opts.dir, quiet: opts.quiet, hostname: opts.hostname, port: opts.port, boundPort: boundPortCell },
    shared: sharedForThreads(fastify),
    maxBacklog: opts.maxBacklog,
    hangTimeout: opts.hangTimeout,
    startTimeout: START_TIMEOUT,
    log: fastify.log,
  })
  fastify.addHook('onClose', async () => { await pool.close() })
  if (boundPortCell) {
    fastify.addHook('onListen', async () => {
      const port = boundPort(fastify)
      if (port !== undefined) Atomics.store(boundPortCell, 0, port)
    })
  }

  return async (request, reply) => {
    assertNextCanServe(request)
    await pool.dispatch(request, reply, requestHead(request, `${request.protocol}://${request.host}${request.url}`))
    return reply
  }
}

/**
 * What the pool threads get as workerData.shared, so that withSpindle's handlers in every
 * pool thread open one store. Inside a Spindle worker: the resources it was given (the
 * process's shared cache). In a server of your own: the store of httpCache when it was
 * registered first (so Next's revalidation also purges its pages), else this thread's
 * Next cache store.
 */
function sharedForThreads (fastify: FastifyInstance): Record<string, unknown> {
  const given = (workerData as { shared?: Record<string, unknown> } | null)?.shared
  if (given?.[DEFAULT_SHARED_NAME] instanceof SharedArrayBuffer) return given
  const httpStore = (fastify as { httpCache?: { store?: unknown } }).httpCache?.store
  const own = nextCacheStore()
  const store = httpStore instanceof SharedStore ? httpStore : own instanceof SharedStore ? own : own.memory
  return { ...given, [DEFAULT_SHARED_NAME]: store.buffer }
}
