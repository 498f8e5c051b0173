import { hash32, SEED_A, SEED_B } from './hash.ts'
import { normalizePath } from './url-normalize.ts'

/**
 * Tag (and path) invalidation times: an open-addressed table of (hash pair -> stale time,
 * expire time) in shared memory. A slot, once claimed, keeps its hashes for the life of
 * the store, so readers need no lock: they load the hashes, then the times, all with
 * Atomics. Tags are identified by two independent 32-bit hashes; a collision can only
 * make an entry stale early, never serve a wrong one.
 */
export class TagTable {
  readonly #hashes: Int32Array
  readonly #times: BigInt64Array
  readonly #capacity: number

  constructor (hashes: Int32Array, times: BigInt64Array) {
    this.#hashes = hashes
    this.#times = times
    this.#capacity = hashes.length / 2
  }

  #find (h1: number, h2: number, claim: boolean): number {
    const cap = this.#capacity
    let i = (h1 >>> 0) % cap
    for (let probes = 0; probes < cap; probes++, i = (i + 1) % cap) {
      const a = Atomics.load(this.#hashes, i * 2)
      if (a === 0) {
        if (!claim) return -1
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

  /** [stale time, expire time] of a tag in microseconds, or undefined if it was never invalidated. Lock-free. */
  read (tag: string): [number, number] | undefined {
    const i = this.#find(hash32(tag, SEED_A), hash32(tag, SEED_B), false)
    if (i < 0) return undefined
    return [Number(Atomics.load(this.#times, i * 2)), Number(Atomics.load(this.#times, i * 2 + 1))]
  }

  used (): number {
    let n = 0
    for (let i = 0; i < this.#capacity; i++) if (Atomics.load(this.#hashes, i * 2) !== 0) n++
    return n
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
