import {
  C_BYTES_USED, C_EVICTIONS, E_BUCKET_NEXT, E_FIRST_BLOCK, E_HASH, E_KEY_LEN, E_META_LEN, E_NEXT, E_PREV, E_STAMP,
  E_VALUE_LEN, E_VISITED, ENTRY_INTS, ENTRY_TIMES, H_ENTRIES, H_FREE_BLOCK_HEAD, H_FREE_BLOCKS, H_FREE_ENTRY_HEAD,
  H_HAND, H_QUEUE_HEAD, H_QUEUE_TAIL, H_STAMP, type LayoutConfig, NONE, type Regions, T_EXPIRE_AT, T_STORED_AT,
} from './layout.ts'

/**
 * The entries of the shared store: a chained hash table of entry records, each pointing at
 * a chain of fixed-size data blocks, and the SIEVE queue that picks what to evict. Not
 * thread-safe by itself: every method runs with the store's lock held.
 */
export class EntryTable {
  readonly #header: Int32Array
  readonly #counters: Float64Array
  readonly #buckets: Int32Array
  readonly #entries: Int32Array
  readonly #times: Float64Array
  readonly #links: Int32Array
  readonly #data: Uint8Array
  readonly blockSize: number

  constructor (buffer: SharedArrayBuffer, r: Regions, config: LayoutConfig, header: Int32Array, counters: Float64Array) {
    this.#header = header
    this.#counters = counters
    this.#buckets = new Int32Array(buffer, r.buckets, config.bucketCount)
    this.#entries = new Int32Array(buffer, r.entries, config.blockCount * ENTRY_INTS)
    this.#times = new Float64Array(buffer, r.entryTimes, config.blockCount * ENTRY_TIMES)
    this.#links = new Int32Array(buffer, r.blockLinks, config.blockCount)
    this.#data = new Uint8Array(buffer, r.data, config.blockCount * config.blockSize)
    this.blockSize = config.blockSize
  }

  get blockCount (): number { return this.#links.length }

  /** Empties the table: every block and entry record back on its free list. */
  reset (): void {
    const h = this.#header
    const blocks = this.#links.length
    this.#buckets.fill(NONE)
    for (let b = 0; b < blocks; b++) this.#links[b] = b + 1 < blocks ? b + 1 : NONE
    for (let e = 0; e < blocks; e++) {
      this.#entries[e * ENTRY_INTS + E_BUCKET_NEXT] = e + 1 < blocks ? e + 1 : NONE
      this.#entries[e * ENTRY_INTS + E_STAMP] = 0
    }
    h[H_FREE_BLOCK_HEAD] = blocks > 0 ? 0 : NONE
    h[H_FREE_BLOCKS] = blocks
    h[H_FREE_ENTRY_HEAD] = blocks > 0 ? 0 : NONE
    h[H_ENTRIES] = 0
    h[H_QUEUE_HEAD] = NONE
    h[H_QUEUE_TAIL] = NONE
    h[H_HAND] = NONE
    this.#counters[C_BYTES_USED] = 0
  }

  /** The entry whose key is exactly `key` (compared in full, not by hash), or NONE. */
  find (hash: number, key: Uint8Array): number {
    const ents = this.#entries
    let e = this.#buckets[(hash >>> 0) & (this.#buckets.length - 1)]!
    while (e !== NONE) {
      const base = e * ENTRY_INTS
      if (ents[base + E_HASH] === hash && ents[base + E_KEY_LEN] === key.length && this.#keyEquals(e, key)) return e
      e = ents[base + E_BUCKET_NEXT]!
    }
    return NONE
  }

  #keyEquals (e: number, key: Uint8Array): boolean {
    const bs = this.blockSize
    let block = this.#entries[e * ENTRY_INTS + E_FIRST_BLOCK]!
    for (let done = 0; done < key.length; block = this.#links[block]!) {
      const n = Math.min(bs, key.length - done)
      const start = block * bs
      for (let i = 0; i < n; i++) if (this.#data[start + i] !== key[done + i]) return false
      done += n
    }
    return true
  }

  field (e: number, field: number): number { return this.#entries[e * ENTRY_INTS + field]! }
  storedAt (e: number): number { return this.#times[e * ENTRY_TIMES + T_STORED_AT]! }
  /** When the oldest entry was stored (entries queue in the order they were stored); Infinity when empty. */
  oldestStoredAt (): number {
    const tail = this.#header[H_QUEUE_TAIL]!
    return tail === NONE ? Infinity : this.storedAt(tail)
  }
  expireAt (e: number): number { return this.#times[e * ENTRY_TIMES + T_EXPIRE_AT]! }
  markVisited (e: number): void { this.#entries[e * ENTRY_INTS + E_VISITED] = 1 }

  /** Copies the metadata and value of entry `e` out of shared memory into a new buffer. */
  copyOut (e: number): Buffer {
    const base = e * ENTRY_INTS
    const length = this.#entries[base + E_META_LEN]! + this.#entries[base + E_VALUE_LEN]!
    const out = Buffer.allocUnsafe(length)
    const bs = this.blockSize
    let block = this.#entries[base + E_FIRST_BLOCK]!
    let skip = this.#entries[base + E_KEY_LEN]!
    while (skip >= bs) { block = this.#links[block]!; skip -= bs }
    for (let done = 0; done < length; block = this.#links[block]!) {
      const n = Math.min(bs - skip, length - done)
      const start = block * bs + skip
      out.set(this.#data.subarray(start, start + n), done)
      done += n
      skip = 0
    }
    return out
  }

  remove (e: number): void {
    const ents = this.#entries
    const h = this.#header
    const base = e * ENTRY_INTS
    // Bucket chain.
    const slot = (ents[base + E_HASH]! >>> 0) & (this.#buckets.length - 1)
    let cur = this.#buckets[slot]!
    if (cur === e) this.#buckets[slot] = ents[base + E_BUCKET_NEXT]!
    else {
      while (cur !== NONE && ents[cur * ENTRY_INTS + E_BUCKET_NEXT] !== e) cur = ents[cur * ENTRY_INTS + E_BUCKET_NEXT]!
      if (cur !== NONE) ents[cur * ENTRY_INTS + E_BUCKET_NEXT] = ents[base + E_BUCKET_NEXT]!
    }
    // Queue (prev = newer, next = older).
    const prev = ents[base + E_PREV]!
    const next = ents[base + E_NEXT]!
    if (h[H_HAND] === e) h[H_HAND] = prev
    if (prev !== NONE) ents[prev * ENTRY_INTS + E_NEXT] = next
    else h[H_QUEUE_HEAD] = next
    if (next !== NONE) ents[next * ENTRY_INTS + E_PREV] = prev
    else h[H_QUEUE_TAIL] = prev
    // Blocks back to the free list.
    const total = ents[base + E_KEY_LEN]! + ents[base + E_META_LEN]! + ents[base + E_VALUE_LEN]!
    const first = ents[base + E_FIRST_BLOCK]!
    let last = first
    let count = 1
    while (this.#links[last] !== NONE) { last = this.#links[last]!; count++ }
    this.#links[last] = h[H_FREE_BLOCK_HEAD]!
    h[H_FREE_BLOCK_HEAD] = first
    h[H_FREE_BLOCKS]! += count
    // Entry record back to its free list; stamp 0 marks it free.
    ents[base + E_STAMP] = 0
    ents[base + E_BUCKET_NEXT] = h[H_FREE_ENTRY_HEAD]!
    h[H_FREE_ENTRY_HEAD] = e
    h[H_ENTRIES]! -= 1
    this.#counters[C_BYTES_USED]! -= total
  }

  /** SIEVE: walk from the hand towards newer entries, giving visited ones a second chance. */
  #evictOne (): boolean {
    const ents = this.#entries
    const h = this.#header
    let e = h[H_HAND] !== NONE ? h[H_HAND]! : h[H_QUEUE_TAIL]!
    if (e === NONE) return false
    while (ents[e * ENTRY_INTS + E_VISITED] === 1) {
      ents[e * ENTRY_INTS + E_VISITED] = 0
      e = ents[e * ENTRY_INTS + E_PREV]!
      if (e === NONE) e = h[H_QUEUE_TAIL]!
    }
    h[H_HAND] = e
    this.remove(e)
    this.#counters[C_EVICTIONS]! += 1
    return true
  }

  /**
   * Stores an entry made of `parts` (key, metadata, value) at the head of the queue,
   * evicting as needed. The key must not be present. False only if it can never fit.
   */
  insert (hash: number, parts: readonly Uint8Array[], storedAt: number, expireAt: number): boolean {
    const h = this.#header
    const ents = this.#entries
    const bs = this.blockSize
    const total = parts.reduce((n, p) => n + p.length, 0)
    const need = Math.max(1, Math.ceil(total / bs))
    if (need > this.#links.length) return false
    while (h[H_FREE_BLOCKS]! < need || h[H_FREE_ENTRY_HEAD] === NONE) {
      if (!this.#evictOne()) return false
    }
    const e = h[H_FREE_ENTRY_HEAD]!
    const base = e * ENTRY_INTS
    h[H_FREE_ENTRY_HEAD] = ents[base + E_BUCKET_NEXT]!
    // Take `need` blocks off the free list; the chain keeps its links, the last one ends it.
    const first = h[H_FREE_BLOCK_HEAD]!
    let last = first
    for (let n = 1; n < need; n++) last = this.#links[last]!
    h[H_FREE_BLOCK_HEAD] = this.#links[last]!
    this.#links[last] = NONE
    h[H_FREE_BLOCKS]! -= need
    let block = first
    let at = 0
    for (const part of parts) {
      for (let done = 0; done < part.length;) {
        const n = Math.min(bs - at, part.length - done)
        this.#data.set(part.subarray(done, done + n), block * bs + at)
        done += n
        at += n
        if (at === bs) { block = this.#links[block]!; at = 0 }
      }
    }
    ents[base + E_HASH] = hash
    ents[base + E_FIRST_BLOCK] = first
    ents[base + E_KEY_LEN] = parts[0]!.length
    ents[base + E_META_LEN] = parts[1]!.length
    ents[base + E_VALUE_LEN] = parts[2]!.length
    ents[base + E_VISITED] = 0
    const stamp = ((h[H_STAMP]! + 1) | 0) || 1
    h[H_STAMP] = stamp
    ents[base + E_STAMP] = stamp
    this.#times[e * ENTRY_TIMES + T_STORED_AT] = storedAt
    this.#times[e * ENTRY_TIMES + T_EXPIRE_AT] = expireAt
    const slot = (hash >>> 0) & (this.#buckets.length - 1)
    ents[base + E_BUCKET_NEXT] = this.#buckets[slot]!
    this.#buckets[slot] = e
    const head = h[H_QUEUE_HEAD]!
    ents[base + E_PREV] = NONE
    ents[base + E_NEXT] = head
    if (head !== NONE) ents[head * ENTRY_INTS + E_PREV] = e
    else h[H_QUEUE_TAIL] = e
    h[H_QUEUE_HEAD] = e
    h[H_ENTRIES]! += 1
    this.#counters[C_BYTES_USED]! += total
    return true
  }
}
