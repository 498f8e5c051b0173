// The Fastify app spindle start runs in every worker: the React Router build mounted by
// reactRouterAdapter, next to an ordinary Fastify route.
import { reactRouterAdapter } from '@spindle/react-router'

export const options = { logger: process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : false }

export default async function app (fastify) {
  fastify.get('/healthcheck', async () => ({ ok: true }))
  await fastify.register(reactRouterAdapter, { build: new URL('./build/server/index.js', import.meta.url).pathname })
}
