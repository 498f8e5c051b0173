import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

// Next.js behind a Fastify catch-all, the same for both variants.
const dir = dirname(fileURLToPath(import.meta.url))
const next = createRequire(import.meta.url)('next')

export default async function app (fastify) {
  const nextApp = next({ dev: false, dir })
  await nextApp.prepare()
  const handle = nextApp.getRequestHandler()
  fastify.all('/*', async (request, reply) => {
    reply.hijack()
    await handle(request.raw, reply.raw)
  })
  fastify.addHook('onClose', () => nextApp.close())
}
