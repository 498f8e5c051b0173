// Pool mode of the adapter: this thread keeps Fastify, its hooks and the client files; each
// page request goes to a render pool thread (pool-thread.ts) that holds the build.
import { fileURLToPath } from 'node:url'
import { workerData } from 'node:worker_threads'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { RenderPool, requestHead } from '@spindle/runtime/pool'
import type { ResolvedOptions } from './options.ts'
import type { ClientFiles } from './static-files.ts'
import { routedUrl } from './web-request.ts'

/** ms the pool threads have to import the build. */
const START_TIMEOUT = 60_000

export async function poolRender (fastify: FastifyInstance, opts: ResolvedOptions, clientFiles: ClientFiles | undefined): Promise<(request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>> {
  const pool = await RenderPool.start({
    filename: fileURLToPath(new URL('./pool-thread.js', import.meta.url)),
    threads: opts.threads,
    concurrency: opts.threadConcurrency,
    options: { build: opts.build, mode: opts.mode },
    // Inside a runtime worker, the resources it was given (the shared cache's buffer) go on
    // to the pool threads, so getSharedStore() there opens the same store.
    shared: (workerData as { shared?: Record<string, unknown> } | null)?.shared ?? {},
    maxBacklog: opts.maxBacklog,
    hangTimeout: opts.hangTimeout,
    startTimeout: START_TIMEOUT,
    log: fastify.log,
  })
  fastify.addHook('onClose', async () => { await pool.close() })

  return async (request, reply) => {
    if (clientFiles && (request.method === 'GET' || request.method === 'HEAD')) {
      if (await clientFiles.serve(request.url.split('?')[0]!, opts.staticMaxAge, request, reply)) return reply
    }
    await pool.dispatch(request, reply, requestHead(request, routedUrl(request).href))
    return reply
  }
}
