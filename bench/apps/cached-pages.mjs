// A server-rendered page behind @spindle/cache's httpCache: the `cache` workload. Under
// Spindle every worker shares one store (handed over by cached-pages.config.mjs); under a
// single process, node:cluster or PM2 each process has a store of its own.
import { httpCache } from '@spindle/cache'

export const options = { logger: false }

function render (id) {
  // Stand-in for a framework render: markup with real work per row.
  let rows = ''
  for (let i = 0; i < 100; i++) {
    let h = i
    for (let j = 0; j < 2000; j++) h = (h * 31 + j) % 1000003
    rows += `<tr><td>${id}</td><td>${i}</td><td>${h}</td></tr>\n`
  }
  return `<!doctype html><html><head><title>Page ${id}</title></head><body><table>\n${rows}</table></body></html>`
}

export default async function app (fastify) {
  await fastify.register(httpCache, { storeOptions: { maxBytes: 64 * 1024 * 1024 } })
  fastify.get('/page/:id', async (request, reply) => {
    reply.header('content-type', 'text/html; charset=utf-8').header('cache-control', 's-maxage=600')
    return render(request.params.id)
  })
}
