// nextAdapter with threads in a server of your own: the Next cache (withSpindle) is one
// store for every pool thread; httpCache hits are answered in this thread; basePath.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { createSharedStore, httpCache } from '@spindle/cache'
import { nextAdapter } from '@spindle/next'
import { buildFixture as buildCacheApp, fixtureDir as cacheAppDir, textOf } from './fixtures/cache-app/harness.ts'
import { buildFixture } from './fixtures/build.ts'

const basePathDir = fileURLToPath(new URL('./fixtures/basepath-app/', import.meta.url))
const tmp = mkdtempSync(join(tmpdir(), 'spindle-next-pool-apps-'))
const renderLog = join(tmp, 'renders.log')
let cached: FastifyInstance
let based: FastifyInstance
let cachedUrl: string
let basedUrl: string
const reachedRoute: string[] = []
const warnings: Array<Error & { code?: string }> = []
const onWarning = (w: Error) => { warnings.push(w) }

beforeAll(async () => {
  buildCacheApp()
  buildFixture(basePathDir)
  writeFileSync(renderLog, '')
  // Pool threads start with a copy of this environment.
  process.env.RENDER_LOG = renderLog
  cached = Fastify()
  process.on('warning', onWarning)
  await cached.register(nextAdapter, { dir: cacheAppDir, threads: 2 })
  cachedUrl = await cached.listen({ port: 0, host: '127.0.0.1' })

  based = Fastify()
  await based.register(httpCache, { store: createSharedStore({ maxBytes: 8 * 1024 * 1024 }) })
  // preHandler runs only for requests that reach a route: an httpCache hit ends in onRequest.
  based.addHook('preHandler', async (req) => { reachedRoute.push(req.url) })
  await based.register(nextAdapter, { dir: basePathDir, threads: 1 })
  basedUrl = await based.listen({ port: 0, host: '127.0.0.1' })
  process.off('warning', onWarning)
}, 300_000)

afterAll(async () => {
  await Promise.all([cached?.close(), based?.close()])
  delete process.env.RENDER_LOG
  rmSync(tmp, { recursive: true, force: true })
})

function renders (name: string): number {
  return readFileSync(renderLog, 'utf8').split('\n').filter((line) => line === name).length
}

async function get (base: string, path: string, init: Parameters<typeof request>[1] = {}) {
  const res = await request(base + path, init)
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('nextAdapter with threads: one Next cache for every pool thread', () => {
  it('does not warn of per-thread caches for a build made with withSpindle', () => {
    expect(warnings.filter((w) => w.code === 'SPINDLE_NEXT_CACHE_PER_THREAD')).toEqual([])
  })

  it("renders a 'use cache' component once when both pool threads miss it at the same time", async () => {
    // Two requests at once go to the two threads (the least busy takes each).
    const [a, b] = await Promise.all([get(cachedUrl, '/slow'), get(cachedUrl, '/slow')])
    expect(textOf(a.body, 'report')).toMatch(/^report:/)
    expect(textOf(b.body, 'report')).toBe(textOf(a.body, 'report'))
    expect(renders('report')).toBe(1)
  })

  it('serves an ISR page rendered by one thread from the other, and revalidateTag reaches both', async () => {
    const first = await get(cachedUrl, '/isr')
    const again = await Promise.all([get(cachedUrl, '/isr'), get(cachedUrl, '/isr')])
    for (const res of again) {
      expect(textOf(res.body, 'isr')).toBe(textOf(first.body, 'isr'))
      expect(res.headers['x-nextjs-cache']).toBe('HIT')
    }
    expect(renders('isr')).toBe(1)
    expect((await get(cachedUrl, '/api/revalidate?tag=isr', { method: 'POST' })).status).toBe(200)
    const after = await Promise.all([get(cachedUrl, '/isr'), get(cachedUrl, '/isr')])
    expect(textOf(after[0].body, 'isr')).not.toBe(textOf(first.body, 'isr'))
    expect(textOf(after[1].body, 'isr')).toBe(textOf(after[0].body, 'isr'))
    expect(renders('isr')).toBe(2)
  })

  it('renders once after every revalidateTag, however the two threads\' misses interleave', async () => {
    // A thread whose lookup missed just before the other stored the entry and let its claim
    // go used to take the claim and render again (about one revalidation in 30).
    let previous = textOf((await get(cachedUrl, '/isr')).body, 'isr')
    const twice: number[] = []
    for (let i = 0; i < 100; i++) {
      const before = renders('isr')
      expect((await get(cachedUrl, '/api/revalidate?tag=isr', { method: 'POST' })).status).toBe(200)
      const [a, b] = await Promise.all([get(cachedUrl, '/isr'), get(cachedUrl, '/isr')])
      const text = textOf(a.body, 'isr')
      expect(text).not.toBe(previous)
      if (textOf(b.body, 'isr') !== text || renders('isr') !== before + 1) twice.push(i)
      previous = text
    }
    expect(twice).toEqual([])
  })
})

describe('nextAdapter with threads and basePath, behind httpCache', () => {
  it('renders pages under the base path, serves their chunks, 404 outside it', async () => {
    const home = await get(basedUrl, '/docs')
    expect(home.status).toBe(200)
    expect(home.body).toContain('docs home under a base path')
    const chunk = /\/docs\/_next\/static\/[^"]+\.js/.exec(home.body)?.[0]
    expect(chunk).toBeDefined()
    const asset = await get(basedUrl, chunk!)
    expect(asset.status).toBe(200)
    expect(asset.headers['cache-control']).toContain('immutable')
    expect((await get(basedUrl, '/some-page')).status).toBe(404)
  })

  it('answers an httpCache hit in this thread: the request never reaches the pool', async () => {
    // This app's page is dynamic (private); its immutable chunks are what a shared cache keeps.
    const chunk = /\/docs\/_next\/static\/[^"]+\.js/.exec((await get(basedUrl, '/docs')).body)?.[0]
    const path = `${chunk}?hit=1`
    const miss = await get(basedUrl, path)
    expect(miss.status).toBe(200)
    expect(miss.headers['x-cache']).toBe('MISS')
    const hit = await get(basedUrl, path)
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(hit.body).toBe(miss.body)
    expect(reachedRoute.filter((url) => url === path)).toHaveLength(1)
  })
})
