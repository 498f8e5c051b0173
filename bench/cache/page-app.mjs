// The page the HTTP benchmark serves: a ~20 KB HTML "render" that costs CPU time, served
// three ways (appOptions.mode): 'cached' behind httpCache, 'uncached', and 'static'
// (the same bytes, prepared once, from a plain Fastify reply).
import { getSharedResource } from '@spindle/runtime/worker'
import { httpCache } from '@spindle/cache'

function render (id) {
  // Stand-in for a framework render: build the markup with some real work per row.
  let rows = ''
  for (let i = 0; i < 200; i++) {
    let h = i
    for (let j = 0; j < 2000; j++) h = (h * 31 + j) % 1000003
    rows += `<tr><td>${id}</td><td>${i}</td><td>${h}</td><td>${'lorem ipsum dolor sit amet '.repeat(3)}</td></tr>\n`
  }
  return `<!doctype html><html><head><title>Page ${id}</title></head><body><table>\n${rows}</table></body></html>`
}

export default async function app (fastify, opts) {
  const renders = new Int32Array(getSharedResource('renders'))
  const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 's-maxage=300' }
  if (opts.mode === 'cached') await fastify.register(httpCache, { statusHeader: false })
  if (opts.mode === 'static') {
    const page = Buffer.from(render('1'))
    fastify.get('/page/:id', async (_req, reply) => reply.headers(headers).send(page))
    return
  }
  fastify.get('/page/:id', async (req, reply) => {
    Atomics.add(renders, 0, 1)
    return reply.headers(headers).send(render(req.params.id))
  })
}
