import { hash32, SEED_A, SEED_B } from './hash.ts'
import { H_TAG_SEQ, H_TAGS_USED } from './layout.ts'
import { normalizePath } from './url-normalize.ts'

/**
 * Tag (and path) invalidation times: an open-addressed table of (hash pair -> stale time,
 * expire time) in shared memory. Readers need no lock: they load the hashes, then the
 * times, all with Atomics, under a sequence word that tells them to look again while a
 * writer rebuilds the table. Tags are identified by two independent 32-bit hashes; a
 * collision can only make an entry stale early, never serve a wrong one.
 *
 * The store keeps the table at most half full (`rebuild` drops the tags that can no
 * longer change any answer), so a lookup is a few probes.
 */
export class TagTable {
  readonly #hashes: Int32Array
  readonly #times: BigInt64Array
  readonly #capacity: number
  /** The store header: H_TAGS_USED counts the tags held, H_TAG_SEQ is odd while the table is rebuilt. */
  readonly #header: Int32Array

  constructor (hashes: Int32Array, times: BigInt64Array, header: Int32Array) {
    this.#hashes = hashes
    this.#times = times
    this.#header = header
    this.#capacity = hashes.length / 2
  }

  get capacity (): number { return this.#capacity }

  /** Tags held. Under the store lock. */
  get used (): number { return this.#header[H_TAGS_USED]! }

  #find (h1: number, h2: number, claim: boolean): number {
    const cap = this.#capacity
    let i = (h1 >>> 0) % cap
    for (let probes = 0; probes < cap; probes++, i = (i + 1) % cap) {
      const a = Atomics.load(this.#hashes, i * 2)
      if (a === 0) {
        if (!claim) return -1
        this.#header[H_TAGS_USED]! += 1
        // Publish the second hash first: a reader that sees h1 then sees h2.
        Atomics.store(this.#hashes, i * 2 + 1, h2)
        Atomics.store(this.#hashes, i * 2, h1)
        return i
      }
      if (a === h1 && Atomics.load(this.#hashes, i * 2 + 1) === h2) return i
    }
    return -1
  }

  /**
   * Marks `tag` stale at `staleAt` and expired at `expireAt` (integer microseconds). Call under the store lock.
   * Returns false when the table is full (the caller then invalidates everything).
   */
  mark (tag: string, staleAt: number, expireAt: number): boolean {
    const i = this.#find(hash32(tag, SEED_A), hash32(tag, SEED_B), true)
    if (i < 0) return false
    Atomics.store(this.#times, i * 2, BigInt(staleAt))
    Atomics.store(this.#times, i * 2 + 1, BigInt(expireAt))
    return true
  }

  /** [stale time, expire time] of a tag in microseconds, or undefined if it is not held. Lock-free. */
  read (tag: string): [number, number] | undefined {
    const h1 = hash32(tag, SEED_A)
    const h2 = hash32(tag, SEED_B)
    for (;;) {
      const seq = Atomics.load(this.#header, H_TAG_SEQ)
      if ((seq & 1) === 0) {
        const i = this.#find(h1, h2, false)
        const found = i < 0 ? undefined : [Number(Atomics.load(this.#times, i * 2)), Number(Atomics.load(this.#times, i * 2 + 1))] as [number, number]
        if (Atomics.load(this.#header, H_TAG_SEQ) === seq) return found
      }
    }
  }

  /** Stale times (µs) of the tags held, in no order. Under the store lock. */
  staleTimes (): number[] {
    const out: number[] = []
    for (let i = 0; i < this.#capacity; i++) {
      if (Atomics.load(this.#hashes, i * 2) !== 0) out.push(Number(Atomics.load(this.#times, i * 2)))
    }
    return out
  }

  /**
   * Keeps only the tags invalidated at or after `keepFromUs`, placed anew so that probe
   * chains stay short. Returns the latest stale time dropped (µs), 0 if none. Under the store lock.
   */
  rebuild (keepFromUs: number): number {
    const kept: Array<[number, number, bigint, bigint]> = []
    let dropped = 0
    for (let i = 0; i < this.#capacity; i++) {
      const h1 = Atomics.load(this.#hashes, i * 2)
      if (h1 === 0) continue
      const stale = Atomics.load(this.#times, i * 2)
      if (Number(stale) >= keepFromUs) kept.push([h1, Atomics.load(this.#hashes, i * 2 + 1), stale, Atomics.load(this.#times, i * 2 + 1)])
      else dropped = Math.max(dropped, Number(stale))
    }
    Atomics.add(this.#header, H_TAG_SEQ, 1)
    try {
      this.#hashes.fill(0)
      this.#header[H_TAGS_USED] = 0
      for (const [h1, h2, stale, expire] of kept) {
        const i = this.#find(h1, h2, true)
        Atomics.store(this.#times, i * 2, stale)
        Atomics.store(this.#times, i * 2 + 1, expire)
      }
    } finally {
      Atomics.add(this.#header, H_TAG_SEQ, 1)
    }
    return dropped
  }
}

/**
 * The implicit tags of a path: one per segment prefix, so '/a/b' is purged by '/a' and
 * '/a/b', not '/ab'. Paths are compared in canonical form: '/%64eep' is '/deep'.
 */
export function pathTags (raw: string): string[] {
  const path = normalizePath(raw)
  const out = ['\0path:/']
  let end = path.indexOf('/', 1)
  while (end !== -1) {
    out.push('\0path:' + path.slice(0, end))
    end = path.indexOf('/', end + 1)
  }
  if (path.length > 1) out.push('\0path:' + (path.endsWith('/') ? path.slice(0, -1) : path))
  return out
}

/** The tag a path-prefix purge marks. */
export function pathTag (raw: string): string {
  const prefix = normalizePath(raw)
  const p = prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : prefix
  return '\0path:' + p
}
