import { afterEach, describe, expect, it } from 'vitest'
import { fileURLToPath } from 'node:url'
import { serve, type SpindleServer } from '@spindle/runtime'
import { cacheControlRoutes, createSharedStore } from '@spindle/cache'
import { request } from 'undici'

let server: SpindleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** A request on a fresh connection, so the kernel picks a worker for each. */
async function fresh (url: string, init: { method?: 'GET' | 'POST', body?: string, headers?: Record<string, string> } = {}): Promise<{ status: number, text: string, thread: string, cache: string }> {
  const res = await request(url, { method: init.method ?? 'GET', body: init.body, headers: init.headers, reset: true, headersTimeout: 10_000, bodyTimeout: 10_000 })
  return { status: res.statusCode, text: await res.body.text(), thread: String(res.headers['x-thread']), cache: String(res.headers['x-cache']) }
}

const TOKEN = 'a-test-purge-token-0123456789'
const PURGE_HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }

describe('one cache for every worker (serve() with 2 workers)', () => {
  it('renders each page once across threads, and purges from the control port for all of them', async () => {
    const store = createSharedStore({ maxBytes: 8 * 1024 * 1024, maxTags: 256 })
    const renders = new SharedArrayBuffer(8)
    const count = new Int32Array(renders)
    server = await serve({
      app: fileURLToPath(new URL('./fixtures/cached-app.mjs', import.meta.url)),
      workers: 2,
      port: 0,
      controlPort: 0,
      host: '127.0.0.1',
      handleSignals: false,
      shared: { spindleCache: store.buffer, renders },
      controlRoutes: cacheControlRoutes(store, { token: TOKEN }),
    })
    const threads = new Set<string>()
    const pages = ['1', '2', '3']
    for (const page of pages) {
      // Concurrent misses for one page on many connections: one render, the rest wait for it.
      const answers = await Promise.all(Array.from({ length: 12 }, () => fresh(`${server!.url}/page/${page}`)))
      for (const a of answers) threads.add(a.thread)
      expect(new Set(answers.map((a) => a.text)).size).toBe(1)
      expect(answers.every((a) => a.status === 200)).toBe(true)
    }
    expect(Atomics.load(count, 0)).toBe(pages.length)
    expect(threads.size).toBe(2)
    const stats = store.stats()
    expect(stats.coalescedWaits).toBeGreaterThan(0)
    expect(stats.hits).toBeGreaterThan(0)

    // Purge a tag from the main thread's control port: every worker misses it next.
    const purged = await fresh(`${server.controlUrl}/cache/purge`, { method: 'POST', headers: PURGE_HEADERS, body: JSON.stringify({ tags: ['page-1'] }) })
    expect(purged.status).toBe(200)
    expect(JSON.parse(purged.text)).toEqual({ deleted: 0, tags: 1, paths: 0 })
    const after = await fresh(`${server.url}/page/1`)
    expect(after.cache).toBe('MISS')
    expect(Atomics.load(count, 0)).toBe(pages.length + 1)
    for (let i = 0; i < 6; i++) expect((await fresh(`${server.url}/page/1`)).cache).toBe('HIT')
    expect((await fresh(`${server.url}/page/2`)).cache).toBe('HIT')

    const bad = await fresh(`${server.controlUrl}/cache/purge`, { method: 'POST', headers: PURGE_HEADERS, body: '{"tags": "page-2"}' })
    expect(bad.status).toBe(400)
    expect(JSON.parse(bad.text).code).toBe('SPINDLE_CACHE_INVALID_PURGE')
    const remote = JSON.parse((await fresh(`${server.controlUrl}/cache/stats`)).text)
    expect(remote.entries).toBe(store.stats().entries)

    // Stale-while-revalidate: every thread serves the stale page, and one refresh runs for all of them.
    await fresh(`${server.url}/swr`)
    await new Promise((resolve) => setTimeout(resolve, 2100))
    const stale = await Promise.all(Array.from({ length: 16 }, () => fresh(`${server!.url}/swr`)))
    expect(stale.map((a) => a.text)).toEqual(Array(16).fill('swr 1'))
    expect(stale.every((a) => a.cache === 'STALE')).toBe(true)
    expect(new Set(stale.map((a) => a.thread)).size).toBe(2)
    await new Promise((resolve) => setTimeout(resolve, 800))
    expect(Atomics.load(count, 1)).toBe(2)
    expect((await fresh(`${server.url}/swr`)).text).toBe('swr 2')

    // A crashed worker is replaced and finds the cache intact: the store lives in the main thread.
    const restartsBefore = server.status().reduce((n, w) => n + w.restarts, 0)
    await fresh(`${server.url}/crash`)
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline && !(server.status().reduce((n, w) => n + w.restarts, 0) > restartsBefore && server.status().every((w) => w.state === 'ready'))) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(server.status().every((w) => w.state === 'ready')).toBe(true)
    const rendered = Atomics.load(count, 0)
    const afterCrash = await Promise.all(Array.from({ length: 16 }, () => fresh(`${server!.url}/page/3`)))
    expect(afterCrash.every((a) => a.cache === 'HIT')).toBe(true)
    expect(new Set(afterCrash.map((a) => a.thread)).size).toBe(2)
    expect(Atomics.load(count, 0)).toBe(rendered)
  })
})
