import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { deserialize, serialize } from 'node:v8'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSharedStore } from '@spindle/cache'
import { serve, type SpindleServer } from '@spindle/runtime'
import { buildFixture, fixtureDir, FormData, pinTwoWorkers, textOf, type Pinned } from './fixtures/cache-app/harness.ts'

// The fixture app (cacheComponents, 'use cache', a cached page, a route handler that
// revalidates, a server action that calls updateTag) on 2 Spindle workers sharing one
// store. Every render of a cached body appends its name to a log shared by the workers.

const tmp = mkdtempSync(join(tmpdir(), 'spindle-next-cache-app-'))
const renderLog = join(tmp, 'renders.log')
// Created once, as a spindle.config would in the main thread; it outlives a restart.
const store = createSharedStore({ maxBytes: 16 * 1024 * 1024 })
let server: SpindleServer | undefined
let a: Pinned
let b: Pinned

function renders (name: string): number {
  try {
    return readFileSync(renderLog, 'utf8').split('\n').filter((line) => line === name).length
  } catch {
    return 0
  }
}

async function start (): Promise<void> {
  writeFileSync(renderLog, '')
  server = await serve({
    app: join(fixtureDir, 'server.mjs'),
    workers: 2,
    port: 0,
    host: '127.0.0.1',
    controlPort: false,
    handleSignals: false,
    // The tests pin one keep-alive connection to each worker: connection balance would close
    // one of them when its worker rendered more than the other, and the reconnect may land
    // on the other worker.
    balanceConnections: false,
    env: { RENDER_LOG: renderLog, NEXT_TELEMETRY_DISABLED: '1' },
    shared: { spindleCache: store.buffer },
  })
  ;[a, b] = await pinTwoWorkers(server.url)
}

async function stop (): Promise<void> {
  await Promise.all([a?.agent.close(), b?.agent.close()])
  await server?.close()
  server = undefined
}

beforeAll(async () => {
  buildFixture()
  await start()
})

afterAll(async () => {
  await stop()
  rmSync(tmp, { recursive: true, force: true })
})

describe('Next.js caches shared by 2 workers', () => {
  it("renders a 'use cache' component once, not once per worker", async () => {
    const first = await a.get('/cached')
    expect(first.worker).toBe(a.worker)
    const second = await b.get('/cached')
    expect(second.worker).toBe(b.worker)
    expect(textOf(first.body, 'products')).toMatch(/^products:/)
    expect(textOf(second.body, 'products')).toBe(textOf(first.body, 'products'))
    expect(renders('products')).toBe(1)
  })

  it("renders a 'use cache' component once when both workers miss it at the same time", async () => {
    const [first, second] = await Promise.all([a.get('/slow'), b.get('/slow')])
    expect(new Set([first.worker, second.worker]).size).toBe(2)
    expect(textOf(first.body, 'report')).toMatch(/^report:/)
    expect(textOf(second.body, 'report')).toBe(textOf(first.body, 'report'))
    expect(renders('report')).toBe(1)
  })

  it('renders a cached page once, not once per worker', async () => {
    const first = await a.get('/isr')
    const second = await b.get('/isr')
    expect(second.worker).not.toBe(first.worker)
    expect(textOf(second.body, 'isr')).toBe(textOf(first.body, 'isr'))
    expect(second.cache).toBe('HIT')
    expect(renders('isr')).toBe(1)
  })

  it('revalidateTag handled by worker A is seen by the very next request on worker B', async () => {
    const before = textOf((await b.get('/cached')).body, 'products')
    const count = renders('products')
    expect((await a.post('/api/revalidate?tag=products')).status).toBe(200)
    const after = await b.get('/cached')
    expect(after.worker).toBe(b.worker)
    expect(textOf(after.body, 'products')).not.toBe(before)
    expect(renders('products')).toBe(count + 1)
    // ...and worker A gets the same new entry without rendering it again.
    expect(textOf((await a.get('/cached')).body, 'products')).toBe(textOf(after.body, 'products'))
    expect(renders('products')).toBe(count + 1)
  })

  it('revalidatePath handled by worker A expires the page for worker B', async () => {
    const before = textOf((await b.get('/isr')).body, 'isr')
    expect((await a.post('/api/revalidate?path=/isr')).status).toBe(200)
    const after = await b.get('/isr')
    expect(textOf(after.body, 'isr')).not.toBe(before)
  })

  it("revalidateTag(tag, 'max') on worker A: worker B serves the page stale once, then the new one", async () => {
    const before = textOf((await b.get('/isr')).body, 'isr')
    expect((await a.post('/api/revalidate?tag=isr&profile=max')).status).toBe(200)
    const stale = await b.get('/isr')
    expect(stale.cache).toBe('STALE')
    expect(textOf(stale.body, 'isr')).toBe(before)
    // The background regeneration lands in the shared store: worker A sees it too.
    let fresh: string | undefined
    for (let i = 0; i < 50 && (fresh === undefined || fresh === before); i++) {
      await sleep(50)
      fresh = textOf((await a.get('/isr')).body, 'isr')
    }
    expect(fresh).not.toBe(before)
    expect(textOf((await b.get('/isr')).body, 'isr')).toBe(fresh)
  })

  it('updateTag in a server action on worker A is seen by the next request on worker B', async () => {
    const page = await a.get('/action')
    const before = textOf(page.body, 'action')
    expect(textOf((await b.get('/action')).body, 'action')).toBe(before)
    // Submit the form as a browser without JavaScript would.
    const actionField = /name="(\$ACTION_ID_[^"]+)"/.exec(page.body)?.[1]
    expect(actionField).toBeDefined()
    const form = new FormData()
    form.set(actionField!, '')
    const posted = await a.post('/action', form)
    expect(posted.status).toBeLessThan(400)
    const after = await b.get('/action')
    expect(textOf(after.body, 'action')).not.toBe(before)
  })

  it('renders a cached page afresh, not a 500, when its entry in the store is of another shape', async () => {
    // The key the handler reads for /isr: the build, then Next's own key for the page.
    const { getRouteCacheKey } = createRequire(join(fixtureDir, 'package.json'))('next/dist/server/lib/route-cache-key.js')
    const buildId = readFileSync(join(fixtureDir, '.next', 'BUILD_ID'), 'utf8').trim()
    const key = `next:${buildId}:isr:` + getRouteCacheKey('/isr', { kind: 'APP_PAGE', sourceRoute: '/isr/page' })
    await a.get('/isr')
    expect(store.get(key, { peek: true })).toBeDefined()
    const wrong = [
      42,
      { lastModified: Date.now(), value: null, cacheControl: { revalidate: 60, expire: 3600 } },
      { lastModified: Date.now(), value: { kind: 'FETCH', data: { headers: {}, body: '', url: '', status: 200 }, revalidate: 10 } },
      { lastModified: Date.now(), value: { kind: 'APP_PAGE', html: 5, rscData: 'x', headers: 'x', status: 'abc' }, cacheControl: { revalidate: 60, expire: 3600 } },
    ]
    for (const entry of wrong) {
      store.set(key, serialize(entry))
      const page = await b.get('/isr')
      expect(page.status, JSON.stringify(entry)).toBe(200)
      expect(textOf(page.body, 'isr')).toMatch(/^isr:/)
      // Rendered as on a miss, and stored in its place.
      expect(deserialize(store.get(key, { peek: true })!.value)).toMatchObject({ value: { kind: 'APP_PAGE', html: expect.stringContaining('isr:') } })
    }
  })

  it('serves nothing from an old build after a new build, though the store lives on', async () => {
    const oldIsr = textOf((await a.get('/isr')).body, 'isr')
    const oldProducts = textOf((await a.get('/cached')).body, 'products')
    expect(store.stats().entries).toBeGreaterThan(0)
    await stop()
    const buildId = buildFixture(true)
    await start()
    const isr = await b.get('/isr')
    const products = await a.get('/cached')
    expect(textOf(isr.body, 'isr')).not.toBe(oldIsr)
    expect(textOf(products.body, 'products')).not.toBe(oldProducts)
    expect(renders('isr')).toBe(1)
    expect(renders('products')).toBe(1)
    expect(buildId).toMatch(/\S/)
  }, 240_000)
})
