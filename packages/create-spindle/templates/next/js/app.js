// The Fastify app `spindle start` runs in every worker thread: Next.js mounted by
// nextAdapter, next to your own Fastify routes (they win over Next's).
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { nextAdapter } from '@spindle/next'

// In the Docker image the app sits next to Next's standalone tree (scripts/image.mjs);
// in the project, next to the sources and .next/.
const standalone = join(import.meta.dirname, 'standalone')
const dir = existsSync(join(standalone, 'server.js')) ? standalone : import.meta.dirname

export const options = { logger: process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : false }

/** @param {import('fastify').FastifyInstance} fastify */
export default async function app (fastify) {
  fastify.get('/healthcheck', async () => ({ ok: true }))
  await fastify.register(nextAdapter, {
    dir,
    dev: process.env.NODE_ENV === 'development',
  })
}
