import type { Lease } from '@spindle/cache'
import { buildNamespace } from './build-id.ts'
import { decode, encode } from './codec.ts'
import { isStoredUseCacheEntry, type StoredUseCacheEntry } from './entry-shapes.ts'
import { invalidateNextTags, memoryOf, nextCacheStore, storeTags } from './store.ts'

// Next.js `cacheHandlers` ('use cache' with cacheComponents) on the shared store. The
// behaviour follows Next's own default handler, with the store shared by every thread:
// entries are dropped once past `revalidate` (production), a stale tag hands the entry
// back with `revalidate: -1`, an expired tag makes it a miss, and a `get` waits for a
// `set` of the same key in progress, in this thread or any other. Beyond Next's handler,
// the first thread to miss a key claims it until its `set`: a miss on another thread
// meanwhile waits for that result instead of rendering the same thing again.

/** A 'use cache' entry as Next passes and expects it. */
export interface UseCacheEntry {
  value: ReadableStream<Uint8Array>
  tags: string[]
  stale: number
  timestamp: number
  expire: number
  revalidate: number
}

// A claim lasts this long at most, from a miss to its set: a render that takes longer,
// fails without a set, or dies with its thread cannot hold other threads up for longer.
const CLAIM_MS = 5_000
// Longest a get waits for another thread's set of the same key before it misses.
const WAIT_MS = 10_000

const pendingSets = new Map<string, Promise<void>>()
// Keys this thread missed and is producing, released by their set.
const claims = new Map<string, Lease>()

function streamOf (bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start (controller) {
      controller.enqueue(bytes)
      controller.close()
    },
  })
}

async function readAll (stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return Buffer.concat(chunks)
}

function keyOf (ns: string, cacheKey: string): string {
  return ns + 'uc:' + cacheKey
}

async function get (cacheKey: string, _softTags?: string[]): Promise<UseCacheEntry | undefined> {
  try {
    const ns = buildNamespace()
    if (ns === undefined) return undefined
    const key = keyOf(ns, cacheKey)
    const pending = pendingSets.get(key)
    if (pending) await pending
    const store = nextCacheStore()
    // Peek first, so a miss that turns into a hit after waiting is counted once.
    // A promise only on a memory miss with a fleet tier behind it (which may wait for another process's render).
    let found = await store.get(key, { peek: true })
    if (found) store.count(found.stale ? 'stale' : 'hit')
    else {
      const claim = store.tryLease(key, CLAIM_MS)
      if (claim) {
        // Another thread may have stored it, and let its claim go, between the lookup and
        // the lease: without this second look both threads rendered it (about one
        // revalidation in 30 with two pool threads). Shared memory only: the lookup above
        // already asked the fleet tier, which now counts this thread as the key's producer.
        found = memoryOf(store).get(key, { peek: true })
        if (!found) {
          // This thread produces the entry: Next calls set next, which releases the claim.
          store.count('miss')
          claims.get(key)?.release()
          claims.set(key, claim)
          return undefined
        }
        claim.release()
        store.count(found.stale ? 'stale' : 'hit')
      } else if (await store.waitFor(key, WAIT_MS)) found = await store.get(key)
    }
    if (!found) return undefined
    const stored = decode<unknown>(found.value)
    // Not an entry this handler stored: Next could not read it (see entry-shapes.ts).
    if (!isStoredUseCacheEntry(stored)) return undefined
    const { body, ...entry } = stored
    // A negative expire marks an evicted entry in Next's tiered handler.
    if (entry.expire < 0) return undefined
    return {
      ...entry,
      // The store marks an entry stale when one of its tags went stale after it was stored.
      revalidate: found.stale ? -1 : entry.revalidate,
      value: streamOf(body),
    }
  } catch {
    return undefined
  }
}

async function set (cacheKey: string, pendingEntry: Promise<UseCacheEntry>): Promise<void> {
  const ns = buildNamespace()
  if (ns === undefined) {
    await pendingEntry
    return
  }
  const key = keyOf(ns, cacheKey)
  const store = nextCacheStore()
  let done = (): void => {}
  pendingSets.set(key, new Promise<void>((resolve) => { done = resolve }))
  const lease = claims.get(key) ?? store.tryLease(key, CLAIM_MS)
  claims.delete(key)
  try {
    const entry = await pendingEntry
    // expire 0 marks a dynamic entry: Next renders it again on every read anyway.
    if (entry.expire === 0 && !process.env.__NEXT_DEV_SERVER) return
    const body = await readAll(entry.value)
    const tags = storeTags(entry.tags)
    // A tag revalidated while the entry was being produced makes it stale on arrival:
    // keep it out rather than let it pass as fresh.
    if (store.tagsRevalidatedAt(tags) > entry.timestamp) return
    const stored: StoredUseCacheEntry = {
      tags: entry.tags,
      stale: entry.stale,
      timestamp: entry.timestamp,
      expire: entry.expire,
      revalidate: entry.revalidate,
      body,
    }
    store.set(key, encode(stored), {
      tags,
      // In production Next's handler treats an entry past `revalidate` as missing.
      expireAt: entry.timestamp + Math.min(entry.revalidate, entry.expire) * 1000,
    })
  } catch {
    // A failed generation or stream stores nothing; the next get misses.
  } finally {
    lease?.release()
    pendingSets.delete(key)
    done()
  }
}

async function refreshTags (): Promise<void> {
  // Tag times live in shared memory: every thread already sees the latest.
}

/** The latest time any of `tags` (the page's implicit path tags) was revalidated; 0 if never. */
async function getExpiration (tags: string[]): Promise<number> {
  try {
    return nextCacheStore().tagsRevalidatedAt(storeTags(tags))
  } catch {
    return 0
  }
}

/** With durations: stale at once, gone after `expire` seconds (revalidateTag with a profile). Without: gone at once (updateTag, revalidatePath). */
async function updateTags (tags: string[], durations?: { expire?: number }): Promise<void> {
  if (tags.length === 0) return
  const expire = durations?.expire
  invalidateNextTags(tags, typeof expire === 'number' ? expire * 1000 : 0)
}

const useCacheHandler = { get, set, refreshTags, getExpiration, updateTags }

export default useCacheHandler
