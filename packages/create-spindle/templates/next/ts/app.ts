// The Fastify app `spindle start` runs in every worker thread: Next.js mounted by
// nextAdapter, next to your own Fastify routes (they win over Next's).
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { nextAdapter } from '@spindle/next'

export const options = { logger: process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : false }

export default async function app (fastify: FastifyInstance): Promise<void> {
  fastify.get('/healthcheck', async () => ({ ok: true }))
  await fastify.register(nextAdapter, {
    dir: dirname(fileURLToPath(import.meta.url)),
    dev: process.env.NODE_ENV === 'development',
  })
}
