// A plain Fastify app. `spindle start` runs it on every core; `fastify-cli` or your own
// server.js could run it unchanged, since it is just a plugin.
import { threadId } from 'node:worker_threads'

/** Fastify server options for each worker. */
export const options = {
  logger: process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : false,
}

/** @param {import('fastify').FastifyInstance} fastify */
export default async function app (fastify) {
  fastify.get('/', async () => ({ hello: 'world', thread: threadId }))

  // CPU-bound work, as a render would be: ?n= sets how much.
  fastify.get('/primes', async (request) => {
    const n = Math.min(Number(request.query.n) || 20000, 2_000_000)
    let count = 0
    for (let i = 2; i < n; i++) {
      let prime = true
      for (let d = 2; d * d <= i; d++) if (i % d === 0) { prime = false; break }
      if (prime) count++
    }
    return { below: n, primes: count, thread: threadId }
  })
}
