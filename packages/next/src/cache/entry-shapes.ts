// What the handlers store, and the checks a stored entry passes before Next sees it.
// An entry is not always this code's own: the fleet tier's Redis holds what any process on
// the same prefix wrote (another Spindle version, another program, a hostile writer), and
// a store may hold what another Next version put there. Next trusts what a handler returns:
// a value it cannot read fails the request, on every request until the entry goes. So an
// entry of any other shape is a miss, and Next renders the page again.
//
// The checks run on every read: they look only at the types of the fields Next reads for
// each kind (a few typeof tests, no copies), not at the content of the values.

export interface CacheControl { revalidate?: number | false, expire?: number }

/** A value of Next's incremental cache (IncrementalCacheValue). */
export interface IncrementalValue {
  kind: string
  headers?: Record<string, unknown>
  revalidate?: number
  [key: string]: unknown
}

/** An incremental cache entry: the value Next gave, when, and the lifetimes Next gave with it. */
export interface StoredValue {
  lastModified: number
  value: IncrementalValue | null
  cacheControl: CacheControl | undefined
}

/** A 'use cache' entry (Next's CacheEntry), its stream read into `body`. */
export interface StoredUseCacheEntry {
  tags: string[]
  stale: number
  timestamp: number
  expire: number
  revalidate: number
  body: Uint8Array
}

type Fields = Record<string, unknown>

const isRecord = (x: unknown): x is Fields => typeof x === 'object' && x !== null && !Array.isArray(x)
const isString = (x: unknown): x is string => typeof x === 'string'
const isBytes = (x: unknown): x is Uint8Array => x instanceof Uint8Array
// A time or a duration as the handlers store it (NaN, Infinity and negative numbers are not).
const isTime = (x: unknown): x is number => Number.isFinite(x) && (x as number) >= 0
// Node refuses to send other status codes, and `new Response` to build them.
const isStatus = (x: unknown): boolean => Number.isInteger(x) && (x as number) >= 200 && (x as number) <= 599
const optional = (x: unknown, check: (x: unknown) => boolean): boolean => x === undefined || check(x)

function isStringArray (x: unknown): x is string[] {
  return Array.isArray(x) && x.every(isString)
}

/** Node's OutgoingHttpHeaders: each value a string, a number or a list of strings. */
function isHeaders (x: unknown): boolean {
  if (!isRecord(x)) return false
  for (const key in x) {
    const v = x[key]
    if (v !== undefined && !isString(v) && typeof v !== 'number' && !isStringArray(v)) return false
  }
  return true
}

function isSegmentData (x: unknown): boolean {
  if (!(x instanceof Map)) return false
  for (const [k, v] of x) if (!isString(k) || !isBytes(v)) return false
  return true
}

function isFetchData (x: unknown): boolean {
  if (!isRecord(x) || !isString(x.body) || !isString(x.url) || !optional(x.status, isStatus) || !isRecord(x.headers)) return false
  for (const key in x.headers) if (!isString(x.headers[key])) return false
  return true
}

// The fields Next reads from a value of each kind (next/dist/server/response-cache/types.d.ts).
// Maps, not objects: a kind such as 'constructor' must find nothing.
const VALUE_SHAPES = new Map<string, (v: Fields) => boolean>([
  ['APP_PAGE', (v) => isString(v.html) && optional(v.rscData, isBytes) && optional(v.status, isStatus) &&
    optional(v.postponed, isString) && optional(v.headers, isHeaders) && optional(v.segmentData, isSegmentData)],
  ['APP_ROUTE', (v) => isBytes(v.body) && isStatus(v.status) && isHeaders(v.headers)],
  ['PAGES', (v) => isString(v.html) && isRecord(v.pageData) && optional(v.status, isStatus) && optional(v.headers, isHeaders)],
  ['REDIRECT', (v) => isRecord(v.props)],
  ['FETCH', (v) => isFetchData(v.data) && isTime(v.revalidate) && optional(v.tags, isStringArray)],
  ['IMAGE', (v) => isString(v.etag) && isString(v.upstreamEtag) && isBytes(v.buffer) && isString(v.extension) && optional(v.revalidate, isTime)],
])

// The kinds of value Next accepts for each kind of lookup: it fails the request on any
// other (a FETCH value for a page, a page for a fetch).
const KINDS_FOR_LOOKUP = new Map<string, readonly string[]>([
  ['APP_PAGE', ['APP_PAGE']],
  ['APP_ROUTE', ['APP_ROUTE']],
  ['PAGES', ['PAGES', 'REDIRECT']],
  ['FETCH', ['FETCH']],
  ['IMAGE', ['IMAGE']],
])

function isCacheControl (x: unknown): boolean {
  return isRecord(x) && (x.revalidate === undefined || x.revalidate === false || isTime(x.revalidate)) && optional(x.expire, isTime)
}

/**
 * Whether `x` is an entry as the incremental cache handler stores it, with a value Next can
 * read for a lookup of `kind` (Next's IncrementalCacheKind). Without a kind, any value of a
 * known kind passes. A null value (a Pages Router `notFound`) only for a PAGES lookup.
 */
export function isStoredValue (x: unknown, kind: string | undefined): x is StoredValue {
  if (!isRecord(x) || !isTime(x.lastModified) || !optional(x.cacheControl, isCacheControl)) return false
  const value = x.value
  if (value === null) return kind === 'PAGES'
  if (!isRecord(value) || !isString(value.kind)) return false
  // A kind unknown here (a later Next) is a miss: rendering again is always safe.
  const shape = VALUE_SHAPES.get(value.kind)
  if (shape === undefined) return false
  if (kind !== undefined && KINDS_FOR_LOOKUP.get(kind)?.includes(value.kind) !== true) return false
  return shape(value)
}

/** Whether `x` is a 'use cache' entry as its handler stores it. */
export function isStoredUseCacheEntry (x: unknown): x is StoredUseCacheEntry {
  return isRecord(x) && isStringArray(x.tags) && typeof x.stale === 'number' && typeof x.timestamp === 'number' &&
    typeof x.expire === 'number' && typeof x.revalidate === 'number' && isBytes(x.body)
}
