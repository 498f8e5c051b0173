// A plain Fastify app: `spindle start` runs it on every core. It is just a plugin, so
// fastify-cli or a server.js of your own runs it unchanged.
import { join } from 'node:path'
import { threadId } from 'node:worker_threads'
import fastifyStatic from '@fastify/static'

export const options = { logger: process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : false }

/** @param {import('fastify').FastifyInstance} fastify */
export default async function app (fastify) {
  fastify.get('/api/hello', async () => ({ hello: 'world', thread: threadId }))
  // The page in public/ and its script, which calls the route above.
  await fastify.register(fastifyStatic, { root: join(import.meta.dirname, 'public') })
}
