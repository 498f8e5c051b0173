// The Fastify app spindle start runs in every worker: the React Router build mounted by
// reactRouterAdapter, next to an ordinary Fastify route. Under spindle dev (NODE_ENV=development)
// the adapter serves the source through Vite, with HMR, instead of the build.
import { reactRouterAdapter } from '@spindle/react-router'

export const options = { logger: process.env.LOG_LEVEL ? { level: process.env.LOG_LEVEL } : false }

export default async function app (fastify) {
  fastify.get('/healthcheck', async () => ({ ok: true }))
  await fastify.register(reactRouterAdapter, process.env.NODE_ENV === 'development'
    ? { dev: true, root: new URL('.', import.meta.url).pathname }
    : { build: new URL('./build/server/index.js', import.meta.url).pathname })
}
