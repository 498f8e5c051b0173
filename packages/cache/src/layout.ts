// The shared store's memory layout: one SharedArrayBuffer, carved into regions. Every
// offset is a named constant here; docs/cache.md draws the same picture for maintainers.
//
//   [header Int32 x 64][counters Float64 x 8][tallies BigInt64 x 4][buckets Int32 x B]
//   [entries Int32 x E*ENTRY_INTS][entry times Float64 x E*ENTRY_TIMES][block links Int32 x N]
//   [tag hashes Int32 x T*2][tag times BigInt64 x T*2][leases Int32 x L*LEASE_INTS][lease deadlines Float64 x L]
//   [data: N blocks of blockSize bytes]

export const MAGIC = 0x53504e44 // "SPND"
export const LAYOUT_VERSION = 2

// Header (Int32 indexes).
export const H_LOCK = 0 // 0 = free, else the owner's tag; the only word every operation CASes
export const H_LOCK_WAITERS = 1
export const H_MAGIC = 2
export const H_VERSION = 3
export const H_BLOCK_SIZE = 4
export const H_BLOCK_COUNT = 5
export const H_ENTRY_CAPACITY = 6
export const H_BUCKET_COUNT = 7
export const H_TAG_CAPACITY = 8
export const H_LEASE_CAPACITY = 9
export const H_FREE_BLOCK_HEAD = 10
export const H_FREE_BLOCKS = 11
export const H_FREE_ENTRY_HEAD = 12
export const H_ENTRIES = 13
export const H_QUEUE_HEAD = 14 // newest entry (SIEVE inserts here)
export const H_QUEUE_TAIL = 15 // oldest entry
export const H_HAND = 16 // SIEVE hand: next eviction candidate, walks tail -> head
export const H_MAX_ENTRY_BYTES = 17
export const H_STAMP = 18 // increments per stored entry: tells a reused slot from the entry it held
export const H_TAGS_USED = 19 // tags held in the tag table
export const H_LEASE_RELEASES = 20 // waiters for a lease sleep on this word (Atomics.waitAsync)
export const H_LOCK_TIMEOUT = 21
export const H_TAG_SEQ = 22 // odd while the tag table is being rebuilt (readers look again)
export const HEADER_INTS = 64

// Counters (Float64 indexes), written under the lock.
export const C_EVICTIONS = 0
export const C_SETS = 1
export const C_REJECTED = 2
export const C_RESETS = 3
export const C_BYTES_USED = 4 // key + metadata + value bytes of live entries
export const C_GLOBAL_INVALIDATED_AT = 5 // every entry stored before is gone (set to make room in the tag table)
export const C_CLOCK = 6 // last store-clock reading (ms, strictly increasing)
export const C_TAGS_FREED_BEFORE = 7 // latest invalidation time (ms) of a tag whose slot was freed
export const COUNTERS = 8

// Lookup tallies (BigInt64 indexes), added to with Atomics outside the lock.
export const S_HITS = 0
export const S_MISSES = 1
export const S_STALE_HITS = 2
export const S_COALESCED = 3
export const TALLIES = 4

// One entry record (Int32 fields).
export const E_HASH = 0
export const E_BUCKET_NEXT = 1
export const E_FIRST_BLOCK = 2
export const E_KEY_LEN = 3
export const E_META_LEN = 4
export const E_VALUE_LEN = 5
export const E_VISITED = 6
export const E_PREV = 7 // towards the head (newer)
export const E_NEXT = 8 // towards the tail (older)
export const E_STAMP = 9
export const ENTRY_INTS = 10
// One entry record (Float64 fields).
export const T_STORED_AT = 0
export const T_EXPIRE_AT = 1
export const ENTRY_TIMES = 2

// One lease (coalescing) record (Int32 fields); its deadline is a Float64.
export const L_H1 = 0
export const L_H2 = 1
export const L_TOKEN = 2
export const L_UNUSED = 3
export const LEASE_INTS = 4

export const NONE = -1

export interface LayoutConfig {
  blockSize: number
  blockCount: number
  bucketCount: number
  tagCapacity: number
  leaseCapacity: number
}

export interface Regions {
  header: number
  counters: number
  tallies: number
  buckets: number
  entries: number
  entryTimes: number
  blockLinks: number
  tagHashes: number
  tagTimes: number
  leases: number
  leaseDeadlines: number
  data: number
  byteLength: number
}

const align8 = (n: number): number => Math.ceil(n / 8) * 8

/** Byte offsets of every region for a given configuration. */
export function regionsFor (c: LayoutConfig): Regions {
  const header = 0
  const counters = align8(header + HEADER_INTS * 4)
  const tallies = align8(counters + COUNTERS * 8)
  const buckets = align8(tallies + TALLIES * 8)
  const entries = align8(buckets + c.bucketCount * 4)
  const entryTimes = align8(entries + c.blockCount * ENTRY_INTS * 4)
  const blockLinks = align8(entryTimes + c.blockCount * ENTRY_TIMES * 8)
  const tagHashes = align8(blockLinks + c.blockCount * 4)
  const tagTimes = align8(tagHashes + c.tagCapacity * 2 * 4)
  const leases = align8(tagTimes + c.tagCapacity * 2 * 8)
  const leaseDeadlines = align8(leases + c.leaseCapacity * LEASE_INTS * 4)
  const data = align8(leaseDeadlines + c.leaseCapacity * 8)
  return { header, counters, tallies, buckets, entries, entryTimes, blockLinks, tagHashes, tagTimes, leases, leaseDeadlines, data, byteLength: data + c.blockCount * c.blockSize }
}

/** The largest block count whose layout fits in `maxBytes`. */
export function fitLayout (maxBytes: number, blockSize: number, tagCapacity: number, leaseCapacity: number): LayoutConfig | undefined {
  const fixed = regionsFor({ blockSize, blockCount: 0, bucketCount: 0, tagCapacity, leaseCapacity }).byteLength + 64
  // Per block: its bytes, one entry record, its times, its link and at most two buckets.
  const perBlock = blockSize + ENTRY_INTS * 4 + ENTRY_TIMES * 8 + 4 + 8
  let blockCount = Math.floor((maxBytes - fixed) / perBlock)
  while (blockCount > 0) {
    const config = { blockSize, blockCount, bucketCount: bucketsFor(blockCount), tagCapacity, leaseCapacity }
    if (regionsFor(config).byteLength <= maxBytes) return config
    blockCount--
  }
  return undefined
}

function bucketsFor (blockCount: number): number {
  let b = 1
  while (b < blockCount) b *= 2
  return b
}
