import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serialize } from 'node:v8'
import { afterAll, describe, expect, it } from 'vitest'
import { createSharedStore } from '@spindle/cache'
import { withSpindle } from '@spindle/next'
import SpindleCacheHandler from '@spindle/next/cache-handler'
import useCache from '@spindle/next/use-cache-handler'

// Entries the handlers did not write, written straight into the store under the keys the
// handlers read, as another writer on a shared Redis or another Next version can leave
// them: well-formed v8 data of another shape. Next fails the request on a value it cannot
// read, so each is a miss; what the handlers themselves store stays a hit.

const dir = mkdtempSync(join(tmpdir(), 'spindle-next-shapes-'))
writeFileSync(join(dir, 'BUILD_ID'), 'shapes')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const store = createSharedStore({ maxBytes: 4 * 1024 * 1024 })
withSpindle({}, { store })
const handler = new SpindleCacheHandler({ serverDistDir: join(dir, 'server') })
const NS = 'next:shapes:'

let n = 0
const unique = (name: string): string => `${name}-${++n}`

/** Writes `entry` under a fresh incremental cache key; with `staleTag`, the tag is then revalidated with a profile, so the entry is read stale. */
async function seedIsr (entry: unknown, staleTag?: string): Promise<string> {
  const key = unique('/p')
  store.set(NS + 'isr:' + key, serialize(entry), { tags: staleTag === undefined ? [] : ['next:' + staleTag] })
  if (staleTag !== undefined) await handler.revalidateTag(staleTag, { expire: 3600 })
  return key
}

/** The value the handler hands Next for `entry` read fresh and read stale, or 'miss'. */
async function readIsr (entry: unknown, kind: string | undefined): Promise<unknown[]> {
  const valueOf = (got: { value: unknown } | null): unknown => got === null ? 'miss' : got.value
  return [
    valueOf(await handler.get(await seedIsr(entry), { kind })),
    valueOf(await handler.get(await seedIsr(entry, unique('t')), { kind })),
  ]
}

const cacheControl = { revalidate: 60, expire: 3600 }
const entryOf = (value: unknown, over: Record<string, unknown> = {}): Record<string, unknown> => ({ lastModified: Date.now(), value, cacheControl, ...over })

const appPage = { kind: 'APP_PAGE', html: '<p>hi</p>', rscData: Buffer.from('0:null'), headers: { 'x-next-cache-tags': 'a,b', 'x-n': 1, 'x-l': ['1', '2'] }, status: 200, postponed: undefined, segmentData: new Map([['/_index', Buffer.from('s')]]) }
const fetchData = { headers: { 'content-type': 'application/json' }, body: 'e30=', status: 200, url: 'http://x/' }
const fetchValue = { kind: 'FETCH', data: fetchData, revalidate: 30, tags: ['posts'] }
const route = { kind: 'APP_ROUTE', body: Buffer.from('{}'), status: 200, headers: { 'content-type': 'application/json' } }
const pagesPage = { kind: 'PAGES', html: '<p>hi</p>', pageData: { props: {} }, headers: undefined, status: 200 }

// Per lookup kind: the values Next stores for it, and values of other shapes.
const kinds: Array<[string, { valid: unknown[], wrong: Record<string, unknown> }]> = [
  ['APP_PAGE', {
    valid: [appPage, { ...appPage, postponed: '{}', rscData: undefined, headers: undefined, status: undefined, segmentData: undefined }],
    wrong: {
      'no value (only a Pages Router notFound is stored as null)': null,
      'a number': 42,
      'an unknown kind': { kind: 'WHATEVER', html: 'x' },
      'a FETCH value': fetchValue,
      'an APP_ROUTE value': route,
      'html not a string': { ...appPage, html: 5 },
      'rscData not bytes': { ...appPage, rscData: 'r' },
      'headers a string': { ...appPage, headers: 'x' },
      'a header value an object': { ...appPage, headers: { 'x-a': {} } },
      'status a string': { ...appPage, status: 'abc' },
      'status out of range': { ...appPage, status: 5000 },
      'postponed not a string': { ...appPage, postponed: 1 },
      'segmentData not a Map': { ...appPage, segmentData: {} },
      'a segment not bytes': { ...appPage, segmentData: new Map([['/_index', 's']]) },
    },
  }],
  ['FETCH', {
    valid: [fetchValue, { kind: 'FETCH', data: { ...fetchData, status: undefined }, revalidate: 30 }],
    wrong: {
      'no data': { kind: 'FETCH', data: null, revalidate: 10 },
      'an APP_PAGE value': appPage,
      'body not a string': { ...fetchValue, data: { ...fetchData, body: Buffer.from('x') } },
      'url missing': { ...fetchValue, data: { ...fetchData, url: undefined } },
      'a header value a number': { ...fetchValue, data: { ...fetchData, headers: { 'x-n': 1 } } },
      'revalidate a string': { ...fetchValue, revalidate: '30' },
      'tags a string': { ...fetchValue, tags: 'posts' },
    },
  }],
  ['APP_ROUTE', {
    valid: [route],
    wrong: {
      'body a string': { ...route, body: '{}' },
      'no status': { ...route, status: undefined },
      'no headers': { ...route, headers: undefined },
      'an APP_PAGE value': appPage,
    },
  }],
  ['PAGES', {
    valid: [pagesPage, { kind: 'REDIRECT', props: { __N_REDIRECT: '/x' } }, null],
    wrong: {
      'pageData null': { ...pagesPage, pageData: null },
      'html missing': { ...pagesPage, html: undefined },
      'a REDIRECT without props': { kind: 'REDIRECT' },
      'an APP_PAGE value': appPage,
    },
  }],
  ['IMAGE', {
    valid: [{ kind: 'IMAGE', etag: 'e', upstreamEtag: 'u', buffer: Buffer.from('png'), extension: 'png', revalidate: 60 }],
    wrong: {
      'buffer a string': { kind: 'IMAGE', etag: 'e', upstreamEtag: 'u', buffer: 'png', extension: 'png' },
    },
  }],
]

describe('incremental cache handler: entries of another shape', () => {
  it('an entry that is not { lastModified, value, cacheControl } as the handler stores them is a miss, read fresh or stale', async () => {
    const wrong: Record<string, unknown> = {
      'a number': 42,
      'a string': 'hi',
      'an array': [1, 2],
      'an empty object': {},
      'lastModified a string': entryOf(appPage, { lastModified: 'yesterday' }),
      'lastModified negative': entryOf(appPage, { lastModified: -5 }),
      'lastModified missing': entryOf(appPage, { lastModified: undefined }),
      'cacheControl a string': entryOf(appPage, { cacheControl: 'nope' }),
      'revalidate a string': entryOf(appPage, { cacheControl: { revalidate: 'soon' } }),
      'revalidate and expire negative': entryOf(appPage, { cacheControl: { revalidate: -5, expire: -1 } }),
      'expire NaN': entryOf(appPage, { cacheControl: { revalidate: 60, expire: NaN } }),
    }
    // The same entry with the right fields is read: the keys seeded are the ones the handler reads.
    expect(await readIsr(entryOf(appPage), 'APP_PAGE')).toEqual([appPage, appPage])
    for (const [name, entry] of Object.entries(wrong)) {
      expect(await readIsr(entry, 'APP_PAGE'), name).toEqual(['miss', 'miss'])
    }
  })

  it('without a lookup kind, a value of any kind Next stores is a hit, a value of another kind a miss', async () => {
    for (const [, { valid }] of kinds) {
      for (const value of valid.filter((v) => v !== null)) expect(await readIsr(entryOf(value), undefined)).toEqual([value, value])
    }
    for (const kind of ['WHATEVER', 'constructor', '__proto__', 'toString', 1]) {
      expect(await readIsr(entryOf({ ...appPage, kind }), undefined), String(kind)).toEqual(['miss', 'miss'])
    }
  })

  it.each(kinds)('a %s lookup: the values Next stores are hits, values of another shape misses', async (kind, { valid, wrong }) => {
    for (const value of valid) {
      const read = await readIsr(entryOf(value, kind === 'FETCH' ? { cacheControl: undefined } : {}), kind)
      expect(read, `${kind} ${JSON.stringify(value)}`).toEqual([value, value])
    }
    for (const [name, value] of Object.entries(wrong)) {
      expect(await readIsr(entryOf(value), kind), name).toEqual(['miss', 'miss'])
    }
  })
})

describe("'use cache' handler: entries of another shape", () => {
  const entry = { tags: ['t'], stale: 300, timestamp: Date.now(), expire: 3600, revalidate: 900, body: new Uint8Array(Buffer.from('body')) }

  async function readUseCache (stored: unknown): Promise<{ got: Awaited<ReturnType<typeof useCache.get>>, body: string | undefined }> {
    const key = unique('uc')
    store.set(NS + 'uc:' + key, serialize(stored))
    const got = await useCache.get(key, [])
    const body = got && Buffer.from(await new Response(got.value).arrayBuffer()).toString()
    return { got, body }
  }

  it('an entry that is not { tags, stale, timestamp, expire, revalidate, body } is a miss', async () => {
    // The same entry with the right fields is read: the keys seeded are the ones the handler reads.
    const { got, body } = await readUseCache(entry)
    expect(got).toMatchObject({ tags: ['t'], stale: 300, expire: 3600, revalidate: 900 })
    expect(body).toBe('body')
    const wrong: Record<string, unknown> = {
      'a number': 42,
      'a string': 's',
      'an empty object': {},
      'tags a string': { ...entry, tags: 't' },
      'tags null': { ...entry, tags: null },
      'a tag not a string': { ...entry, tags: [1] },
      'body a string': { ...entry, body: 'body' },
      'body missing': { ...entry, body: undefined },
      'stale a string': { ...entry, stale: '300' },
      'timestamp a string': { ...entry, timestamp: 'now' },
      'expire a string': { ...entry, expire: '3600' },
      'revalidate a string': { ...entry, revalidate: '900' },
    }
    for (const [name, stored] of Object.entries(wrong)) {
      expect((await readUseCache(stored)).got, name).toBeUndefined()
    }
  })
})
