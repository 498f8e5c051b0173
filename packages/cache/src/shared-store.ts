import type { CacheStore } from './cache-store.ts'
import { SPINDLE_CACHE_INVALID_ARGUMENT, SPINDLE_CACHE_INVALID_BUFFER } from './errors.ts'
import { hash32, SEED_A } from './hash.ts'
import {
  C_BYTES_USED, C_CLOCK, C_EVICTIONS, C_GLOBAL_INVALIDATED_AT, C_REJECTED, C_RESETS, C_SETS, C_TAGS_FREED_BEFORE, COUNTERS, E_META_LEN,
  E_STAMP, fitLayout, H_BLOCK_COUNT, H_BLOCK_SIZE, H_BUCKET_COUNT, H_ENTRIES, H_ENTRY_CAPACITY, H_FREE_BLOCKS,
  H_LEASE_CAPACITY, H_LOCK_TIMEOUT, H_MAGIC, H_MAX_ENTRY_BYTES, H_TAG_CAPACITY, H_VERSION, HEADER_INTS,
  LAYOUT_VERSION, type LayoutConfig, LEASE_INTS, MAGIC, NONE, regionsFor, S_COALESCED, S_HITS, S_MISSES,
  S_STALE_HITS, TALLIES,
} from './layout.ts'
import { EntryTable } from './entry-table.ts'
import { Leases, type Lease } from './leases.ts'
import { lock, unlock } from './mutex.ts'
import { resolveStoreOptions, type SharedStoreOptions } from './store-options.ts'
import { pathTag, pathTags, TagTable } from './tag-table.ts'

export type { Lease } from './leases.ts'

export interface SetOptions {
  /** Tags to purge the entry by (`invalidateTags`). */
  tags?: readonly string[]
  /** The URL path the entry belongs to, for `invalidatePaths` (segment prefixes). */
  path?: string
  /** After this time (ms since epoch) the entry is returned with `stale: true`. Default: never. */
  staleAt?: number
  /** After this time (ms since epoch) the entry is gone. Default: never (kept until evicted). */
  expireAt?: number
  /** Any JSON-serializable metadata, returned as is by `get`. */
  meta?: unknown
}

export interface GetOptions {
  /** Do not count a hit or miss (for lookups that are not the caller's own hit or miss). */
  peek?: boolean
}

export interface StoreEntry {
  readonly value: Buffer
  readonly meta: unknown
  readonly tags: readonly string[]
  readonly path: string | undefined
  /** When the entry was stored (ms since epoch, store clock: strictly increasing). */
  readonly storedAt: number
  readonly staleAt: number
  readonly expireAt: number
  /** Past staleAt, or one of its tags or paths was invalidated (with a later expiry) since it was stored. */
  readonly stale: boolean
}

export interface StoreStats {
  hits: number
  misses: number
  staleHits: number
  coalescedWaits: number
  evictions: number
  sets: number
  rejected: number
  resets: number
  entries: number
  /** Key, metadata and value bytes of the stored entries. */
  bytesUsed: number
  /** Bytes of the blocks the entries occupy (bytesUsed rounded up to blocks). */
  bytesAllocated: number
  /** Bytes available for entries (blocks x blockSize). */
  bytesCapacity: number
  /** Size of the SharedArrayBuffer. */
  byteLength: number
  maxEntryBytes: number
}

interface EncodedMeta { t?: string[], p?: string, s?: number, m?: unknown }

const encoder = new TextEncoder()
const NO_TAGS: readonly string[] = Object.freeze([])

/**
 * A key/value store in one SharedArrayBuffer that every thread of the process can open.
 * Values live in fixed-size blocks chained per entry; a hash table of entry records finds
 * them; SIEVE picks what to evict. Every structural operation holds one mutex for the
 * length of a memory copy; tag times are read lock-free. Values are always copied out of
 * shared memory before they are returned.
 */
export class SharedStore implements CacheStore {
  /** Hand this to other threads (e.g. `serve({ shared: { spindleCache: store.buffer } })`) and open it there with `openSharedStore`. */
  readonly buffer: SharedArrayBuffer
  readonly #i32: Int32Array
  readonly #counters: Float64Array
  readonly #tallies: BigInt64Array
  readonly #table: EntryTable
  readonly #tags: TagTable
  readonly #leases: Leases
  readonly #lockTimeout: number
  readonly #maxEntryBytes: number

  constructor (buffer: SharedArrayBuffer, init?: { config: LayoutConfig, maxEntryBytes: number, lockTimeout: number }) {
    if (!(buffer instanceof SharedArrayBuffer)) throw new SPINDLE_CACHE_INVALID_BUFFER(`expected a SharedArrayBuffer, got ${typeof buffer}`)
    if (buffer.byteLength < HEADER_INTS * 4) throw new SPINDLE_CACHE_INVALID_BUFFER('the buffer is too small')
    const header = new Int32Array(buffer, 0, HEADER_INTS)
    if (init) writeHeader(header, init.config, init.maxEntryBytes, init.lockTimeout)
    if (header[H_MAGIC] !== MAGIC) throw new SPINDLE_CACHE_INVALID_BUFFER('it was not made by createSharedStore')
    if (header[H_VERSION] !== LAYOUT_VERSION) throw new SPINDLE_CACHE_INVALID_BUFFER(`layout version ${header[H_VERSION]}, expected ${LAYOUT_VERSION}`)
    const config: LayoutConfig = {
      blockSize: header[H_BLOCK_SIZE]!,
      blockCount: header[H_BLOCK_COUNT]!,
      bucketCount: header[H_BUCKET_COUNT]!,
      tagCapacity: header[H_TAG_CAPACITY]!,
      leaseCapacity: header[H_LEASE_CAPACITY]!,
    }
    const r = regionsFor(config)
    if (r.byteLength > buffer.byteLength) throw new SPINDLE_CACHE_INVALID_BUFFER('its header does not match its size')
    this.buffer = buffer
    this.#i32 = new Int32Array(buffer, 0, HEADER_INTS)
    this.#counters = new Float64Array(buffer, r.counters, COUNTERS)
    this.#tallies = new BigInt64Array(buffer, r.tallies, TALLIES)
    this.#table = new EntryTable(buffer, r, config, this.#i32, this.#counters)
    this.#tags = new TagTable(new Int32Array(buffer, r.tagHashes, config.tagCapacity * 2), new BigInt64Array(buffer, r.tagTimes, config.tagCapacity * 2), header)
    this.#leases = new Leases(this.#i32, new Int32Array(buffer, r.leases, config.leaseCapacity * LEASE_INTS), new Float64Array(buffer, r.leaseDeadlines, config.leaseCapacity), {
      lock: () => this.#lock(),
      unlock: () => unlock(this.#i32),
      coalesced: () => { Atomics.add(this.#tallies, S_COALESCED, 1n) },
    })
    this.#lockTimeout = header[H_LOCK_TIMEOUT]!
    this.#maxEntryBytes = header[H_MAX_ENTRY_BYTES]!
    if (init) this.#reset()
  }

  get maxEntryBytes (): number { return this.#maxEntryBytes }

  #lock (): void {
    if (lock(this.#i32, this.#lockTimeout)) {
      // The previous holder died inside a critical section: its half-done work cannot be trusted.
      this.#reset()
      this.#counters[C_RESETS]! += 1
    }
  }

  /** Store clock: wall time, but strictly increasing across threads, so an entry set after an invalidation is never older than it. Under the lock. */
  #reset (): void {
    this.#table.reset()
    this.#leases.clear()
  }

  #tick (): number {
    const now = Math.max(Date.now(), this.#counters[C_CLOCK]! + 0.001)
    this.#counters[C_CLOCK] = now
    return now
  }

  /** Entry state after its tags, path and the global invalidation time are consulted: 0 live, 1 stale, 2 gone. */
  #tagState (storedAt: number, tags: readonly string[], path: string | undefined, now: number): number {
    if (storedAt < this.#counters[C_GLOBAL_INVALIDATED_AT]!) return 2
    let state = 0
    const storedUs = Math.round(storedAt * 1000)
    const nowUs = Math.round(now * 1000)
    const check = (tag: string): void => {
      const t = this.#tags.read(tag)
      if (t === undefined || storedUs >= t[0]) return
      state = Math.max(state, nowUs >= t[1] ? 2 : 1)
    }
    for (const tag of tags) check(tag)
    if (path !== undefined) for (const tag of pathTags(path)) check(tag)
    return state
  }

  /** The entry for `key`, copied out of shared memory, or undefined. */
  get (key: string, options?: GetOptions): StoreEntry | undefined {
    const keyBytes = encodeKey(key)
    const hash = hash32(key, SEED_A)
    const peek = options?.peek === true
    let bytes: Buffer
    let metaLen: number
    let storedAt: number
    let expireAt: number
    let now: number
    let e: number
    let stamp: number
    // Only the lookup and the copy hold the lock; decoding happens after it is released.
    this.#lock()
    try {
      const t = this.#table
      e = t.find(hash, keyBytes)
      // The store clock can run a little ahead of Date.now() (see #tick).
      now = Math.max(Date.now(), this.#counters[C_CLOCK]!)
      if (e !== NONE && t.expireAt(e) <= now) {
        t.remove(e)
        e = NONE
      }
      if (e !== NONE) {
        metaLen = t.field(e, E_META_LEN)
        bytes = t.copyOut(e)
        storedAt = t.storedAt(e)
        expireAt = t.expireAt(e)
        stamp = t.field(e, E_STAMP)
        t.markVisited(e)
      }
    } finally {
      unlock(this.#i32)
    }
    if (e === NONE) {
      if (!peek) Atomics.add(this.#tallies, S_MISSES, 1n)
      return undefined
    }
    const meta = JSON.parse(bytes!.toString('utf8', 0, metaLen!)) as EncodedMeta
    const tags = meta.t ?? NO_TAGS
    const state = this.#tagState(storedAt!, tags, meta.p, now)
    if (state === 2) {
      this.#removeIfStamp(e, stamp!)
      if (!peek) Atomics.add(this.#tallies, S_MISSES, 1n)
      return undefined
    }
    const staleAt = meta.s ?? Infinity
    const stale = state === 1 || now >= staleAt
    if (!peek) Atomics.add(this.#tallies, stale ? S_STALE_HITS : S_HITS, 1n)
    return { value: bytes!.subarray(metaLen!), meta: meta.m, tags, path: meta.p, storedAt: storedAt!, staleAt, expireAt: expireAt!, stale }
  }

  /** Removes entry slot `e` if it still holds the entry that had `stamp` (it may have been replaced meanwhile). */
  #removeIfStamp (e: number, stamp: number): void {
    this.#lock()
    try {
      if (this.#table.field(e, E_STAMP) === stamp) this.#table.remove(e)
    } finally {
      unlock(this.#i32)
    }
  }

  /**
   * Stores `value` under `key`, replacing any entry, evicting others as needed. Returns
   * false (and stores nothing) when the value is larger than maxEntryBytes.
   */
  set (key: string, value: Uint8Array, options: SetOptions = {}): boolean {
    if (!(value instanceof Uint8Array)) throw new SPINDLE_CACHE_INVALID_ARGUMENT(`value must be a Uint8Array or Buffer, got ${typeof value}`)
    const keyBytes = encodeKey(key)
    const meta: EncodedMeta = {}
    if (options.tags && options.tags.length > 0) meta.t = [...options.tags]
    if (options.path !== undefined) meta.p = options.path
    if (options.staleAt !== undefined && Number.isFinite(options.staleAt)) meta.s = options.staleAt
    if (options.meta !== undefined) meta.m = options.meta
    const metaBytes = encoder.encode(JSON.stringify(meta))
    const hash = hash32(key, SEED_A)
    this.#lock()
    try {
      // A newer value replaces the old one even when it is refused: the old one is outdated.
      const old = this.#table.find(hash, keyBytes)
      if (old !== NONE) this.#table.remove(old)
      if (value.length > this.#maxEntryBytes || !this.#table.insert(hash, [keyBytes, metaBytes, value], this.#tick(), options.expireAt ?? Infinity)) {
        this.#counters[C_REJECTED]! += 1
        return false
      }
      this.#counters[C_SETS]! += 1
      return true
    } finally {
      unlock(this.#i32)
    }
  }

  /** Counts a lookup made with `peek` as the caller's hit, stale hit or miss (for layers that look up in two steps). */
  count (result: 'hit' | 'stale' | 'miss'): void {
    Atomics.add(this.#tallies, result === 'hit' ? S_HITS : result === 'stale' ? S_STALE_HITS : S_MISSES, 1n)
  }

  /** Removes `key`; true if it was there. */
  delete (key: string): boolean {
    const keyBytes = encodeKey(key)
    this.#lock()
    try {
      const e = this.#table.find(hash32(key, SEED_A), keyBytes)
      if (e === NONE) return false
      this.#table.remove(e)
      return true
    } finally {
      unlock(this.#i32)
    }
  }

  /** Removes every entry (tag times stay). */
  clear (): void {
    this.#lock()
    try { this.#reset() } finally { unlock(this.#i32) }
  }

  /**
   * Marks tags as revalidated now: entries stored before are stale at once and gone after
   * `expire` ms (default 0: gone now). Returns the invalidation time. Every thread sees it
   * at once.
   */
  invalidateTags (tags: readonly string[], options?: { expire?: number }): number {
    const expire = options?.expire ?? 0
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) throw new SPINDLE_CACHE_INVALID_ARGUMENT('tags must be an array of strings')
    if (typeof expire !== 'number' || !(expire >= 0)) throw new SPINDLE_CACHE_INVALID_ARGUMENT(`expire must be a number of ms >= 0, got ${String(expire)}`)
    this.#lock()
    try {
      const now = this.#tick()
      const expireAt = Math.min(now + expire, 8.64e15)
      for (const tag of tags) {
        if (this.#tags.used >= this.#tags.capacity / 2) this.#makeTagRoom(now)
        // A full table cannot record the tag: invalidating everything is the safe answer.
        if (!this.#tags.mark(tag, Math.round(now * 1000), Math.round(expireAt * 1000))) this.#counters[C_GLOBAL_INVALIDATED_AT] = now
      }
      return now
    } finally {
      unlock(this.#i32)
    }
  }

  /**
   * Keeps the tag table at most half full, so lookups stay a few probes long: drops the
   * tags older than every stored entry (they can change no answer); if a quarter of the
   * table would still be held, the entries stored before the median tag time are made
   * gone (a global invalidation, which covers those tags) and those tags dropped too.
   * Under the lock.
   */
  #makeTagRoom (now: number): void {
    const c = this.#counters
    let keepFrom = Math.round(Math.min(this.#table.oldestStoredAt(), now) * 1000)
    const held = this.#tags.staleTimes().filter((t) => t >= keepFrom)
    if (held.length >= this.#tags.capacity / 4) {
      const median = held.sort((a, b) => a - b)[held.length >> 1]!
      c[C_GLOBAL_INVALIDATED_AT] = Math.max(c[C_GLOBAL_INVALIDATED_AT]!, median / 1000 + 0.001)
      keepFrom = median + 1
    }
    c[C_TAGS_FREED_BEFORE] = Math.max(c[C_TAGS_FREED_BEFORE]!, this.#tags.rebuild(keepFrom) / 1000)
  }

  /** Invalidates every entry stored with a path equal to, or under, one of `prefixes` ('/blog' covers '/blog/x', not '/blogger'). */
  invalidatePaths (prefixes: readonly string[], options?: { expire?: number }): number {
    if (!Array.isArray(prefixes) || prefixes.some((p) => typeof p !== 'string' || !p.startsWith('/'))) {
      throw new SPINDLE_CACHE_INVALID_ARGUMENT('paths must be an array of strings starting with /')
    }
    return this.invalidateTags(prefixes.map(pathTag), options)
  }

  /**
   * The latest time any of `tags` was invalidated (ms since epoch), 0 if never. A tag no
   * longer held (its slot was freed) answers the latest time a freed tag had, or of a
   * global invalidation: possibly later than its own, never earlier. Lock-free.
   */
  tagsRevalidatedAt (tags: readonly string[]): number {
    let latest = 0
    for (const tag of tags) {
      const t = this.#tags.read(tag)
      if (t !== undefined) latest = Math.max(latest, t[0] / 1000)
      else latest = Math.max(latest, this.#counters[C_TAGS_FREED_BEFORE]!, this.#counters[C_GLOBAL_INVALIDATED_AT]!)
    }
    return latest
  }

  /**
   * Claims the right to produce `key` for at most `ttl` ms. Undefined when another thread
   * (or this one) holds it: wait with `waitFor`. Release the lease when done.
   */
  tryLease (key: string, ttl: number): Lease | undefined {
    return this.#leases.tryLease(key, ttl)
  }

  /** Resolves true once no one holds a lease on `key`, false after `timeout` ms. Never blocks the event loop. */
  waitFor (key: string, timeout: number): Promise<boolean> {
    return this.#leases.waitFor(key, timeout)
  }

  stats (): StoreStats {
    this.#lock()
    try {
      const c = this.#counters
      const i32 = this.#i32
      const blocks = this.#table.blockCount
      const blockSize = this.#table.blockSize
      return {
        hits: Number(Atomics.load(this.#tallies, S_HITS)),
        misses: Number(Atomics.load(this.#tallies, S_MISSES)),
        staleHits: Number(Atomics.load(this.#tallies, S_STALE_HITS)),
        coalescedWaits: Number(Atomics.load(this.#tallies, S_COALESCED)),
        evictions: c[C_EVICTIONS]!,
        sets: c[C_SETS]!,
        rejected: c[C_REJECTED]!,
        resets: c[C_RESETS]!,
        entries: i32[H_ENTRIES]!,
        bytesUsed: c[C_BYTES_USED]!,
        bytesAllocated: (blocks - i32[H_FREE_BLOCKS]!) * blockSize,
        bytesCapacity: blocks * blockSize,
        byteLength: this.buffer.byteLength,
        maxEntryBytes: this.#maxEntryBytes,
      }
    } finally {
      unlock(this.#i32)
    }
  }
}

function encodeKey (key: string): Uint8Array {
  if (typeof key !== 'string' || key.length === 0) throw new SPINDLE_CACHE_INVALID_ARGUMENT(`key must be a non-empty string, got ${typeof key}`)
  return encoder.encode(key)
}

function writeHeader (header: Int32Array, config: LayoutConfig, maxEntryBytes: number, lockTimeout: number): void {
  header[H_BLOCK_SIZE] = config.blockSize
  header[H_BLOCK_COUNT] = config.blockCount
  header[H_ENTRY_CAPACITY] = config.blockCount
  header[H_BUCKET_COUNT] = config.bucketCount
  header[H_TAG_CAPACITY] = config.tagCapacity
  header[H_LEASE_CAPACITY] = config.leaseCapacity
  header[H_MAX_ENTRY_BYTES] = maxEntryBytes
  header[H_LOCK_TIMEOUT] = lockTimeout
  header[H_VERSION] = LAYOUT_VERSION
  Atomics.store(header, H_MAGIC, MAGIC)
}

/** Creates a store in a new SharedArrayBuffer. Do it once per process, in the main thread, and hand `store.buffer` to the workers. */
export function createSharedStore (options?: SharedStoreOptions): SharedStore {
  const opts = resolveStoreOptions(options)
  const config = fitLayout(opts.maxBytes, opts.blockSize, opts.maxTags, opts.maxPending)
  if (!config) throw new SPINDLE_CACHE_INVALID_BUFFER(`maxBytes ${opts.maxBytes} leaves no room for data with these options`)
  const buffer = new SharedArrayBuffer(regionsFor(config).byteLength)
  return new SharedStore(buffer, { config, maxEntryBytes: opts.maxEntryBytes, lockTimeout: opts.lockTimeout })
}

/** Opens a store another thread created, from its `buffer`. */
export function openSharedStore (buffer: SharedArrayBuffer): SharedStore {
  return new SharedStore(buffer)
}
