// String hashes for the shared tables. Over UTF-16 code units: every thread computes the
// same value without encoding the string first. Never 0, so 0 can mean "empty slot".

/** FNV-1a (32 bit) with a seed, then a murmur3 finalizer for better bucket spread. */
export function hash32 (text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return (h | 1) | 0
}

export const SEED_A = 0x9e3779b9 | 0
export const SEED_B = 0x7f4a7c15 | 0
