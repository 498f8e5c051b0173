import { afterEach, describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import { createSharedStore, httpCache } from '@spindle/cache'
import { withSpindle } from '@spindle/next'
import SpindleCacheHandler from '@spindle/next/cache-handler'
import useCache from '@spindle/next/use-cache-handler'

// Next's revalidateTag / revalidatePath / updateTag reach the cache handlers; these must
// purge what httpCache holds for the same pages, through the one store both use.

let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

async function pages (): Promise<{ url: string, runs: Map<string, number> }> {
  const store = createSharedStore({ maxBytes: 4 * 1024 * 1024, maxTags: 256 })
  withSpindle({}, { store })
  app = Fastify()
  await app.register(httpCache, { store })
  const runs = new Map<string, number>()
  app.get('/*', async (req, reply) => {
    const n = (runs.get(req.url) ?? 0) + 1
    runs.set(req.url, n)
    reply.header('cache-control', 's-maxage=600').header('cache-tag', 'posts')
    return `${req.url} ${n}`
  })
  return { url: await app.listen({ port: 0, host: '127.0.0.1' }), runs }
}

const body = async (url: string): Promise<string> => (await fetch(url)).text()

describe('Next.js revalidation purges httpCache', () => {
  it('revalidatePath (the implicit tag _N_T_/path) purges the pages under that path', async () => {
    const { url } = await pages()
    await body(`${url}/blog/a`)
    await body(`${url}/about`)
    expect(await body(`${url}/blog/a`)).toBe('/blog/a 1')
    // revalidatePath('/blog', 'layout') through the 'use cache' handler, as Next sends it.
    await useCache.updateTags(['_N_T_/blog/layout'])
    expect(await body(`${url}/blog/a`)).toBe('/blog/a 2')
    expect(await body(`${url}/about`)).toBe('/about 1')
    // revalidatePath('/about') through the incremental cache handler.
    await new SpindleCacheHandler({}).revalidateTag(['_N_T_/about'])
    expect(await body(`${url}/about`)).toBe('/about 2')
  })

  it('a path tag with dot segments purges no page: Next matches it as spelled, and no page is spelled so', async () => {
    const { url } = await pages()
    for (const path of ['/', '/other', '/blog/a']) await body(url + path)
    // revalidatePath('/other/..'), ('/x/../other'), ... as Next sends them: it does not resolve dot segments.
    const tags = ['_N_T_/other/..', '_N_T_/x/../other', '_N_T_/%2e%2E/other', '_N_T_/./blog/layout', '_N_T_/blog/.%2e/page', '_N_T_/..']
    await new SpindleCacheHandler({}).revalidateTag(tags)
    await useCache.updateTags(tags)
    expect(await body(`${url}/`)).toBe('/ 1')
    expect(await body(`${url}/other`)).toBe('/other 1')
    expect(await body(`${url}/blog/a`)).toBe('/blog/a 1')
    // They are still tags: Next's entries that carry them are revalidated.
    expect(await useCache.getExpiration(['_N_T_/other/..'])).toBeGreaterThan(0)
    // The same pages named without dot segments are purged.
    await useCache.updateTags(['_N_T_/other'])
    expect(await body(`${url}/other`)).toBe('/other 2')
  })

  it('revalidateTag / updateTag purge pages whose Cache-Tag names the tag', async () => {
    const { url } = await pages()
    await body(`${url}/post`)
    expect(await body(`${url}/post`)).toBe('/post 1')
    await new SpindleCacheHandler({}).revalidateTag('posts')
    expect(await body(`${url}/post`)).toBe('/post 2')
    await useCache.updateTags(['posts'])
    expect(await body(`${url}/post`)).toBe('/post 3')
  })

  it("a Next tag spelled as the HTTP cache's own path tag purges no page", async () => {
    const { url } = await pages()
    await body(`${url}/x`)
    await new SpindleCacheHandler({}).revalidateTag(['\0path:/', '\0path:/x'])
    await useCache.updateTags(['\0path:/'])
    expect(await body(`${url}/x`)).toBe('/x 1')
    // Still Next's tags: its entries that carry them are revalidated.
    expect(await useCache.getExpiration(['\0path:/'])).toBeGreaterThan(0)
  })

  it('an expire that is negative or not a number revalidates at once instead of throwing', async () => {
    const { url } = await pages()
    await body(`${url}/post`)
    await new SpindleCacheHandler({}).revalidateTag('posts', { expire: -1 })
    expect(await body(`${url}/post`)).toBe('/post 2')
    await useCache.updateTags(['posts'], { expire: Number.NaN })
    expect(await body(`${url}/post`)).toBe('/post 3')
  })
})
