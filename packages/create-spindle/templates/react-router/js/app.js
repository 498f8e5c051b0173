// The Fastify app `spindle start` runs in every worker thread: the React Router build
// mounted by reactRouterAdapter behind httpCache, next to your own Fastify routes. Under
// `spindle dev` (NODE_ENV=development) the adapter serves the source through Vite with HMR
// instead, and nothing is cached.
import { httpCache } from '@spindle/cache'
import { reactRouterAdapter } from '@spindle/react-router'

export const options = { logger: process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : false }

/** @param {import('fastify').FastifyInstance} fastify */
export default async function app (fastify) {
  const dev = process.env.NODE_ENV === 'development'
  // One cache for every worker (the store spindle.config shares): a route that sends
  // `Cache-Control: s-maxage=...` is rendered once and answered from shared memory after.
  if (!dev) await fastify.register(httpCache)
  fastify.get('/healthcheck', { config: { cache: false } }, async () => ({ ok: true }))
  await fastify.register(reactRouterAdapter, dev
    ? { dev: true }
    : { build: new URL('./build/server/index.js', import.meta.url).pathname })
}
