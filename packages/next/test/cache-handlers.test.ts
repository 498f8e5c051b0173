import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import SpindleCacheHandler from '@spindle/next/cache-handler'
import useCache from '@spindle/next/use-cache-handler'

// The handlers against a real store (private to this thread: no worker shared one).
// Cross-thread behaviour is proven end to end in cache-app.test.ts.

const dirs: string[] = []
function buildDir (id: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'spindle-next-cache-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'BUILD_ID'), id)
  return join(dir, 'server')
}
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })

const buildA = buildDir('build-a')
const buildB = buildDir('build-b')
// Next constructs the incremental handler for every request; that is how both handlers learn the build.
const inBuild = (dir: string): SpindleCacheHandler => new SpindleCacheHandler({ serverDistDir: dir })
let n = 0
const unique = (name: string): string => `${name}-${++n}-${Date.now()}`

function entry (body: string, tags: string[], over: Partial<{ timestamp: number, revalidate: number, expire: number, stale: number }> = {}) {
  return {
    value: new ReadableStream<Uint8Array>({ start (c) { c.enqueue(Buffer.from(body)); c.close() } }),
    tags,
    stale: 300,
    timestamp: Date.now(),
    revalidate: 900,
    expire: 3600,
    ...over,
  }
}

async function text (stream: ReadableStream<Uint8Array> | undefined): Promise<string> {
  return stream ? Buffer.from(await new Response(stream).arrayBuffer()).toString() : '<none>'
}

describe("'use cache' handler", () => {
  it('returns what was set, with a fresh stream on every get', async () => {
    inBuild(buildA)
    const key = unique('k')
    await useCache.set(key, Promise.resolve(entry('hello', ['t1'])))
    const a = await useCache.get(key, [])
    const b = await useCache.get(key, [])
    expect(await text(a?.value)).toBe('hello')
    expect(await text(b?.value)).toBe('hello')
    expect(a).toMatchObject({ tags: ['t1'], revalidate: 900, expire: 3600, stale: 300 })
  })

  it('makes a get during a pending set of the same key wait for it', async () => {
    inBuild(buildA)
    const key = unique('pending')
    let resolve!: (e: ReturnType<typeof entry>) => void
    const setting = useCache.set(key, new Promise((r) => { resolve = r }))
    const getting = useCache.get(key, [])
    await sleep(20)
    resolve(entry('late', []))
    expect(await text((await getting)?.value)).toBe('late')
    await setting
  })

  it('updateTags without durations (updateTag, revalidatePath) expires at once', async () => {
    inBuild(buildA)
    const key = unique('k')
    const tag = unique('tag')
    await useCache.set(key, Promise.resolve(entry('v', [tag])))
    const before = Date.now()
    await useCache.updateTags([tag])
    expect(await useCache.get(key, [])).toBeUndefined()
    expect(await useCache.getExpiration([tag])).toBeGreaterThanOrEqual(before)
    expect(await useCache.getExpiration([unique('never')])).toBe(0)
  })

  it('updateTags with a profile is stale at once (revalidate -1) and gone after its expire', async () => {
    inBuild(buildA)
    const key = unique('k')
    const tag = unique('tag')
    await useCache.set(key, Promise.resolve(entry('v', [tag])))
    await useCache.updateTags([tag], { expire: 1 })
    const stale = await useCache.get(key, [])
    expect(stale?.revalidate).toBe(-1)
    expect(await text(stale?.value)).toBe('v')
    await sleep(1100)
    expect(await useCache.get(key, [])).toBeUndefined()
  })

  it('an entry set after the revalidation is fresh', async () => {
    inBuild(buildA)
    const key = unique('k')
    const tag = unique('tag')
    await useCache.updateTags([tag], { expire: 60 })
    await sleep(5)
    await useCache.set(key, Promise.resolve(entry('new', [tag])))
    expect((await useCache.get(key, []))?.revalidate).toBe(900)
  })

  it('does not store an entry whose tag was revalidated while it was produced', async () => {
    inBuild(buildA)
    const key = unique('k')
    const tag = unique('tag')
    const started = Date.now() - 10
    await useCache.updateTags([tag])
    await useCache.set(key, Promise.resolve(entry('old', [tag], { timestamp: started })))
    expect(await useCache.get(key, [])).toBeUndefined()
  })

  it('drops entries past revalidate and never stores dynamic (expire 0) ones', async () => {
    inBuild(buildA)
    const old = unique('old')
    await useCache.set(old, Promise.resolve(entry('v', [], { timestamp: Date.now() - 2000, revalidate: 1 })))
    expect(await useCache.get(old, [])).toBeUndefined()
    const dynamic = unique('dynamic')
    await useCache.set(dynamic, Promise.resolve(entry('v', [], { expire: 0 })))
    expect(await useCache.get(dynamic, [])).toBeUndefined()
  })

  it('never throws: a failed generation stores nothing and the get misses', async () => {
    inBuild(buildA)
    const key = unique('k')
    const broken = { ...entry('x', []), value: new ReadableStream<Uint8Array>({ start (c) { c.error(new Error('boom')) } }) }
    await expect(useCache.set(key, Promise.resolve(broken))).resolves.toBeUndefined()
    await expect(useCache.set(unique('k'), Promise.reject(new Error('render failed')))).resolves.toBeUndefined()
    await expect(useCache.get(key, [])).resolves.toBeUndefined()
  })

  it('keeps builds apart', async () => {
    const key = unique('k')
    inBuild(buildA)
    await useCache.set(key, Promise.resolve(entry('from A', [])))
    inBuild(buildB)
    expect(await useCache.get(key, [])).toBeUndefined()
    inBuild(buildA)
    expect(await text((await useCache.get(key, []))?.value)).toBe('from A')
  })
})

describe('incremental cache handler (ISR, routes, fetch)', () => {
  const page = (tags: string) => ({
    kind: 'APP_PAGE',
    html: '<p>hi</p>',
    rscData: Buffer.from([0, 1, 2, 255]),
    segmentData: new Map([['/_index', Buffer.from('seg')]]),
    headers: { 'x-next-cache-tags': tags },
    status: 200,
    postponed: undefined,
  })

  it('round-trips Buffers and Maps', async () => {
    const h = inBuild(buildA)
    const key = unique('/p')
    await h.set(key, page('a,b'), { cacheControl: { revalidate: 60, expire: 3600 } })
    const got = await inBuild(buildA).get(key, { kind: 'APP_PAGE' })
    const value = got?.value as ReturnType<typeof page>
    expect(Buffer.isBuffer(value.rscData)).toBe(true)
    expect([...value.rscData]).toEqual([0, 1, 2, 255])
    expect(value.segmentData).toBeInstanceOf(Map)
    expect(value.segmentData.get('/_index')?.toString()).toBe('seg')
    expect(got?.cacheControl).toEqual({ revalidate: 60, expire: 3600 })
    expect(Math.abs(Date.now() - got!.lastModified)).toBeLessThan(1000)
  })

  it('checks the tags of x-next-cache-tags itself: revalidateTag without durations is a miss', async () => {
    const h = inBuild(buildA)
    const key = unique('/p')
    const tag = unique('t')
    await h.set(key, page(`${tag},_N_T_/p`), { cacheControl: { revalidate: 60, expire: 3600 } })
    await h.revalidateTag([tag])
    expect(await h.get(key, { kind: 'APP_PAGE' })).toBeNull()
  })

  it('revalidateTag with a profile hands back the entry aged past revalidate, so Next serves it stale', async () => {
    const h = inBuild(buildA)
    const key = unique('/p')
    await h.set(key, page('_N_T_/layout,_N_T_/isr'), { cacheControl: { revalidate: 60, expire: 3600 } })
    await h.revalidateTag('_N_T_/isr', { expire: 3600 })
    const got = await h.get(key, { kind: 'APP_PAGE' })
    expect(got).not.toBeNull()
    const now = Date.now()
    expect(now - got!.lastModified).toBeGreaterThan(60_000)
    expect(now - got!.lastModified).toBeLessThan(3_600_000)
  })

  it('fetch entries: tags from the context, soft tags checked at read time', async () => {
    const h = inBuild(buildA)
    const key = unique('fetch')
    const tag = unique('posts')
    const soft = unique('_N_T_/blog')
    const data = { kind: 'FETCH', data: { headers: {}, body: 'e30=', status: 200, url: 'http://x' }, revalidate: 30 }
    await h.set(key, data, { fetchCache: true, tags: [tag] })
    expect((await h.get(key, { kind: 'FETCH', tags: [tag], softTags: [soft] }))?.value).toEqual(data)
    await h.revalidateTag(tag, { expire: 3600 })
    const stale = await h.get(key, { kind: 'FETCH', tags: [tag], softTags: [soft] })
    expect(stale?.value).toEqual(data)
    expect(Date.now() - stale!.lastModified).toBeGreaterThan(30_000)
    await h.revalidateTag(soft)
    expect(await h.get(key, { kind: 'FETCH', tags: [tag], softTags: [soft] })).toBeNull()
  })

  it('keeps builds apart', async () => {
    const key = unique('/p')
    await inBuild(buildA).set(key, page(''), { cacheControl: { revalidate: 60 } })
    expect(await inBuild(buildB).get(key, { kind: 'APP_PAGE' })).toBeNull()
    expect(await inBuild(buildA).get(key, { kind: 'APP_PAGE' })).not.toBeNull()
  })
})
