// The page versus.mjs serves: a ~20 KB page behind the httpCache of the build named by appOptions.dist.
export default async function app (fastify, opts) {
  const { httpCache } = await import(opts.dist)
  await fastify.register(httpCache, { statusHeader: false })
  const page = `<!doctype html><html><body>${'<p>lorem ipsum dolor sit amet</p>\n'.repeat(600)}</body></html>`
  fastify.get('/page/:id', async (_req, reply) => reply.headers({ 'content-type': 'text/html; charset=utf-8', 'cache-control': 's-maxage=300' }).send(page))
}
