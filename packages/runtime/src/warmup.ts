// A worker that replaces another warms up before it listens: a few requests through the
// whole app (hooks, routing, the framework's render) compile the hot paths and fill the
// framework's own caches, so the first users it serves are not the ones who pay for that.
// In-process (light-my-request through Fastify's inject): no socket, no port, nothing counted
// as traffic by the worker's status block.
import type { FastifyInstance } from 'fastify'
import type { WarmupReport, WorkerData } from './protocol.ts'
import { renderPoolThreads } from './pool/presence.ts'

type Warmup = Exclude<WorkerData['warmup'], false>

/**
 * Sends the warm-up requests, `warmup.requests` rounds over the paths (more where each pool
 * thread must render `warmup.perThread` times); never throws (a failing page is the app's
 * business). Where the app renders in a pool of threads (pool/presence.ts), each request goes
 * `threads` at once: the pool hands a request to the least busy thread, the first when all
 * idle, so one at a time would all have warmed that one thread. Each thread then gets about
 * one of each.
 */
export async function warmUp (app: FastifyInstance, warmup: Warmup): Promise<WarmupReport> {
  const started = performance.now()
  const deadline = started + warmup.timeout
  let requests = 0
  let failed = 0
  await app.ready()
  const send = async (url: string): Promise<void> => {
    requests++
    try {
      const res = await app.inject({
        method: 'GET',
        url,
        headers: { 'x-spindle-warmup': '1', 'cache-control': 'no-cache', 'user-agent': 'spindle-warmup' },
      })
      if (res.statusCode >= 500) failed++
    } catch {
      failed++
    }
  }
  const threads = renderPoolThreads()
  const atOnce = Math.max(1, threads)
  const rounds = threads > 0 ? Math.max(warmup.requests, Math.ceil(warmup.perThread / warmup.paths.length)) : warmup.requests
  outer: for (let i = 0; i < rounds; i++) {
    for (const url of warmup.paths) {
      if (performance.now() >= deadline) break outer
      await Promise.all(Array.from({ length: atOnce }, () => send(url)))
    }
  }
  return { requests, failed, ms: Math.round(performance.now() - started) }
}
