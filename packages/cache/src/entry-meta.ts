import type { ResponseMeta } from './cache-policy.ts'

// The metadata the HTTP cache keeps with what it stores, and the checks that stand between
// it and a response. Shared memory holds only what this process wrote, but an entry may also
// come from Redis (the fleet tier), where another version of Spindle, another program using
// the same prefix, or someone with write access may have put anything.

/** The metadata of a primary key whose responses vary: the Vary fields and the id that names this set of variants. */
export interface VaryRecord {
  vary: { id: string, f: string[] }
}

/** The metadata of a key that finds a variant by the language it declares: the variant's key. */
export interface LanguageAlias {
  variant: string
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
export const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)

export function isVaryRecord (meta: unknown): meta is VaryRecord {
  if (!isObject(meta) || !isObject(meta.vary)) return false
  const { id, f } = meta.vary
  return typeof id === 'string' && Array.isArray(f) && f.every((name) => typeof name === 'string')
}

export function isLanguageAlias (meta: unknown): meta is LanguageAlias {
  return isObject(meta) && typeof meta.variant === 'string'
}

/**
 * Whether `meta` has the types of a stored response's metadata: checked on every lookup, so
 * only the fields every use reads and no per-header work (about 0.1 µs). What a header line
 * holds is checked once, when an entry comes in from outside the process (isServableMeta).
 */
export function isResponseMeta (meta: unknown): meta is ResponseMeta {
  if (!isObject(meta)) return false
  const { s, h, rt, ia, fl } = meta
  return Number.isInteger(s) && (s as number) >= 200 && (s as number) <= 599 && Array.isArray(h) &&
    isFiniteNumber(rt) && isFiniteNumber(ia) && isFiniteNumber(fl)
}

// RFC 9110 5.1 and 5.5: a field name is a token; a value has no CR, LF or NUL (Node refuses
// to send anything else, so such a stored line would fail every response that used it).
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

/**
 * Whether an entry's metadata, come from outside this process, is something the HTTP cache
 * wrote and can serve: a response's (with every header line a lower-case token and a valid
 * value), a Vary record, or a language alias. Metadata of no kind the HTTP cache writes is
 * left to its own reader (other users of the store, such as Next.js' cache handlers, which
 * keep none). A language alias must name a variant of its own URL.
 */
export function isServableMeta (key: string, meta: unknown): boolean {
  if (meta === undefined) return true
  if (!isObject(meta)) return false
  if ('vary' in meta) return isVaryRecord(meta) && meta.vary.f.every((name) => TOKEN.test(name))
  if ('variant' in meta) return isLanguageAlias(meta) && isVariantOf(meta.variant, key)
  if (!('h' in meta) && !('s' in meta)) return true
  if (!isResponseMeta(meta)) return false
  for (const line of meta.h as unknown[]) {
    if (!Array.isArray(line) || line.length !== 2) return false
    const [name, value] = line as unknown[]
    if (typeof name !== 'string' || typeof value !== 'string' || !TOKEN.test(name) || !FIELD_VALUE.test(value)) return false
  }
  const { nc, mr, au, swr, sie, rq } = meta as Record<string, unknown>
  return [nc, mr, au].every((flag) => flag === undefined || flag === 1) &&
    [swr, sie].every((n) => n === undefined || isFiniteNumber(n)) &&
    (rq === undefined || typeof rq === 'string')
}

/** Whether `variant` is the key of a variant stored under the same primary key as `alias` (cache-key.ts variantKey). */
export function isVariantOf (variant: string, alias: string): boolean {
  const at = alias.indexOf('\n\0vary ')
  return at > 0 && variant.startsWith(alias.slice(0, at + 7))
}
