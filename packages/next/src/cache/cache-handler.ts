import { rememberServerDistDir, buildNamespace } from './build-id.ts'
import { decode, encode } from './codec.ts'
import { isStoredValue, type CacheControl, type IncrementalValue, type StoredValue } from './entry-shapes.ts'
import { invalidateNextTags, nextCacheStore, storeTags } from './store.ts'

// Next.js `cacheHandler` (ISR pages, route handlers, the fetch cache) on the shared store.
// Next constructs it about once per request, so it holds no state of its own: the store
// and the build namespace live at module level.

const FETCH = 'FETCH'
const TAGS_HEADER = 'x-next-cache-tags'

interface GetContext { kind?: string, tags?: string[], softTags?: string[], revalidate?: number | false }
interface SetContext { fetchCache?: boolean, tags?: string[], cacheControl?: CacheControl }

export interface CacheHandlerContext { serverDistDir?: string, [key: string]: unknown }

function valueTags (value: IncrementalValue | null, ctx: SetContext): string[] {
  if (ctx.fetchCache === true || value?.kind === FETCH) return ctx.tags ?? []
  const header = value?.headers?.[TAGS_HEADER]
  return typeof header === 'string' && header.length > 0 ? header.split(',') : []
}

/**
 * The time Next must see as the entry's last modification so that it serves the entry
 * stale and regenerates it in the background, as it does when a tag is stale under its
 * own handler. A page with no revalidate time cannot be made stale by age: it is
 * regenerated before it is served (-1), as Next does for an expired entry.
 */
function staleLastModified (stored: StoredValue, ctx: GetContext, now: number): number {
  if (stored.value?.kind === FETCH) {
    const revalidate = ctx.revalidate || stored.value.revalidate
    return typeof revalidate === 'number' ? Math.min(stored.lastModified, now - revalidate * 1000 - 1) : 1
  }
  const revalidate = stored.cacheControl?.revalidate
  if (typeof revalidate !== 'number') return -1
  return Math.min(stored.lastModified, now - revalidate * 1000 - 1)
}

export default class SpindleCacheHandler {
  constructor (ctx: CacheHandlerContext = {}) {
    rememberServerDistDir(ctx.serverDistDir)
  }

  /** Never throws: a store that cannot answer, or an entry Next could not read (see entry-shapes.ts), is a miss. */
  async get (key: string, ctx: GetContext = {}): Promise<StoredValue | null> {
    try {
      const ns = buildNamespace()
      if (ns === undefined) return null
      const store = nextCacheStore()
      // A promise only on a memory miss with a fleet tier behind it.
      const entry = await store.get(ns + 'isr:' + key)
      if (!entry) return null
      const stored = decode<unknown>(entry.value)
      if (!isStoredValue(stored, ctx.kind)) return null
      // Soft tags (the rendering page's paths) and tags the entry was not stored with are
      // known only at read time; revalidatePath expires them at once.
      if (stored.value?.kind === FETCH) {
        const own = new Set(entry.tags)
        const extra = storeTags([...(ctx.tags ?? []), ...(ctx.softTags ?? [])]).filter((tag) => !own.has(tag))
        if (extra.length > 0 && store.tagsRevalidatedAt(extra) > entry.storedAt) return null
      }
      if (!entry.stale) return stored
      return { ...stored, lastModified: staleLastModified(stored, ctx, Date.now()) }
    } catch {
      return null
    }
  }

  async set (key: string, data: IncrementalValue | null, ctx: SetContext = {}): Promise<void> {
    const ns = buildNamespace()
    if (ns === undefined) return
    const lastModified = Date.now()
    const cacheControl = ctx.fetchCache === true ? undefined : ctx.cacheControl
    const expire = cacheControl?.expire
    const stored: StoredValue = { lastModified, value: data, cacheControl }
    nextCacheStore().set(ns + 'isr:' + key, encode(stored), {
      tags: storeTags(valueTags(data, ctx)),
      // Past `expire` Next regenerates before serving, so the bytes are of no more use.
      expireAt: typeof expire === 'number' ? lastModified + expire * 1000 : undefined,
    })
  }

  /** Stale at once; gone after `durations.expire` seconds, or at once without durations (updateTag, revalidatePath). */
  async revalidateTag (tags: string | string[], durations?: { expire?: number }): Promise<void> {
    const list = typeof tags === 'string' ? [tags] : tags
    if (list.length === 0) return
    const expire = durations?.expire
    invalidateNextTags(list, typeof expire === 'number' ? expire * 1000 : 0)
  }

  resetRequestCache (): void {}
}
