import {
  deltaSeconds, type Directives, parseAge, parseCacheControl, parseETags, parseHttpDate, parseList, parseTargetedCacheControl, qualifiedFields,
} from './cache-control.ts'

/** Header lines of a response, names lower-cased, one pair per line. */
export type HeaderLines = Array<[string, string]>

/** What the plugin keeps beside a stored body (the store's entry metadata). */
export interface ResponseMeta {
  /** status */
  s: number
  /** header lines as stored */
  h: HeaderLines
  /** response time, ms since epoch */
  rt: number
  /** corrected initial age in seconds; -1 when the Age header was broken (the response is stale) */
  ia: number
  /** freshness lifetime in seconds */
  fl: number
  /** no-cache: always revalidate */
  nc?: 1
  /** must-revalidate, proxy-revalidate or s-maxage: never served stale */
  mr?: 1
  /** public or s-maxage: reusable for requests with credentials */
  au?: 1
  swr?: number
  sie?: number
  /** For a stored 206: the Range request it answered. */
  rq?: string
}

export interface PolicyOptions {
  heuristicFraction: number
  heuristicMaxAge: number
  /** Seconds a stale response may serve when revalidation fails. */
  staleOnError: number
  /** Longest time a 4xx or 5xx response is kept, in seconds. */
  maxErrorTtl: number
  /** The targeted Cache-Control field obeyed first (RFC 9213), or false. */
  targeted: string | false
}

/** The directives that govern this cache: a valid targeted field (RFC 9213) replaces Cache-Control. */
export function responseDirectives (lines: HeaderLines, opts: PolicyOptions): Directives {
  const targeted = opts.targeted ? parseTargetedCacheControl(headerValue(lines, opts.targeted)) : undefined
  return targeted ?? parseCacheControl(headerValue(lines, 'cache-control'))
}

// RFC 9110 15.1: statuses whose responses are heuristically cacheable.
const HEURISTIC = new Set([200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501])
// Statuses this cache understands well enough to store (must-understand).
const UNDERSTOOD = new Set([200, 203, 204, 206, 300, 301, 302, 303, 307, 308, 400, 403, 404, 405, 410, 414, 451, 500, 501, 502, 503, 504])
// Hop-by-hop fields and fields only meaningful on the wire: never stored. HTTP2-Settings too
// (RFC 7540 3.2.1): stored from an HTTP/1.1 response, it would be a connection-specific
// field that Node refuses to send over HTTP/2 (RFC 9113 8.2.2).
const NOT_STORED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'te', 'transfer-encoding', 'upgrade', 'http2-settings', 'trailer',
  'proxy-authenticate', 'proxy-authentication-info', 'proxy-authorization', 'content-length', 'age', 'set-cookie',
])
// Fields HTTP/2 allows once in a head (Node's list): a response repeating one, stored from an
// HTTP/1.1 answer, would make Node throw ERR_HTTP2_HEADER_SINGLE_VALUE when served over HTTP/2.
export const SINGLE_VALUE = new Set([
  'access-control-allow-credentials', 'access-control-max-age', 'access-control-request-method', 'age', 'authorization',
  'content-encoding', 'content-language', 'content-length', 'content-location', 'content-md5', 'content-range', 'content-type',
  'date', 'dnt', 'etag', 'expires', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match', 'if-range',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'range', 'referer', 'retry-after',
  'tk', 'upgrade-insecure-requests', 'user-agent', 'x-content-type-options',
])
// RFC 9111 4.3.4: fields a 304 must not replace (the suite and common practice agree).
const NOT_UPDATED = new Set(['content-length', 'content-encoding', 'content-md5', 'content-range', 'etag'])

export function headerValue (h: HeaderLines, name: string): string | string[] | undefined {
  const values = h.filter(([n]) => n === name).map(([, v]) => v)
  if (values.length === 0) return undefined
  return values.length === 1 ? values[0] : values
}

/** Flattens Node-style headers (`{ name: value | value[] }`) into lower-cased lines. */
export function toLines (headers: Record<string, unknown>): HeaderLines {
  const out: HeaderLines = []
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    const n = name.toLowerCase()
    if (Array.isArray(value)) for (const v of value) out.push([n, String(v)])
    else out.push([n, String(value)])
  }
  return out
}

export type Storability = { ok: true, meta: ResponseMeta, keepFor: number } | { ok: false, reason: string }

/** What the request that got a response says about storing it. */
export interface StoringRequest {
  /** It carried credentials (Cookie, Authorization, credentialHeaders) and its route did not declare itself public. */
  credentialed: boolean
  /** Its only credential was Authorization: RFC 9111 3.5 lets s-maxage share the response too. */
  authorizationOnly?: boolean
  /** Cache-Control: no-store on the request. */
  noStore: boolean
  /** A 206 may be stored (its Content-Range was checked by the caller, see ranges.ts). */
  partial?: boolean
  /** Only explicit freshness counts (a POST response, RFC 9110 9.3.3): no heuristic lifetime. */
  explicitOnly?: boolean
}

/**
 * Decides whether a response may be stored by a shared cache (RFC 9111 3), and computes
 * what reuse needs later.
 */
export function analyze (status: number, lines: HeaderLines, requestTime: number, responseTime: number, request: StoringRequest, opts: PolicyOptions): Storability {
  if (status < 200 || (status === 206 && request.partial !== true) || status === 304 || status > 599) return { ok: false, reason: `status ${status}` }
  const cc = responseDirectives(lines, opts)
  const understood = UNDERSTOOD.has(status)
  if (cc.has('must-understand') && !understood) return { ok: false, reason: 'must-understand with an unknown status' }
  if (cc.has('no-store') && !(cc.has('must-understand') && understood)) return { ok: false, reason: 'no-store' }
  if (request.noStore) return { ok: false, reason: 'request no-store' }
  if (cc.get('private') === true) return { ok: false, reason: 'private' }
  // Only a response that says it is for everyone is shared from a request with credentials:
  // `public`. RFC 9111 3.5 also lets s-maxage and must-revalidate say so for Authorization;
  // s-maxage is kept there (a directive only shared caches read), must-revalidate is not
  // (it is a common header of per-user APIs, and shared it hands one user's data to
  // everyone). A Cookie or another credential header takes `public` alone: Next.js sends
  // s-maxage on every prerendered page, including one its proxy shows only to signed-in users.
  const mayShare = cc.has('public') || (request.authorizationOnly === true && cc.has('s-maxage'))
  if (request.credentialed && !mayShare) return { ok: false, reason: 'credentials' }
  if (lines.some(([n]) => n === 'set-cookie')) return { ok: false, reason: 'set-cookie' }
  if (parseList(headerValue(lines, 'vary')).includes('*')) return { ok: false, reason: 'vary *' }
  const explicit = cc.has('s-maxage') || cc.has('max-age') || lines.some(([n]) => n === 'expires')
  // An error is shared only when the route said for how long, and then briefly: one bad
  // moment, or one crafted request, must not be served to everyone for long.
  if (status >= 400 && (!explicit || opts.maxErrorTtl === 0)) return { ok: false, reason: 'error without explicit freshness' }
  if (request.explicitOnly === true && !explicit) return { ok: false, reason: 'no explicit freshness' }
  if (!explicit && !cc.has('public') && !HEURISTIC.has(status)) return { ok: false, reason: 'no freshness information' }

  const stored = storedLines(lines, cc)
  const meta = describe(status, stored, requestTime, responseTime, opts, headerValue(lines, 'age'))
  // After describe: a Date it could not read (two of them included) is replaced, not refused.
  const repeated = repeatedSingleValue(meta.h)
  if (repeated !== undefined) return { ok: false, reason: `${repeated} repeated` }
  const validators = stored.some(([n]) => n === 'etag' || n === 'last-modified')
  if (meta.fl <= 0 && !validators && !meta.swr && !meta.sie) return { ok: false, reason: 'stale at once with no validator' }
  return { ok: true, meta, keepFor: keepFor(meta, validators, opts) }
}

/** How long (ms from now) the store should keep an entry: its freshness, the stale windows, and a day more to revalidate with validators. */
export function keepFor (meta: ResponseMeta, validators: boolean, opts: PolicyOptions): number {
  if (meta.s >= 400) return Math.max(1000, opts.maxErrorTtl * 1000)
  const age = meta.ia < 0 ? 0 : meta.ia
  const windowS = Math.max(0, meta.fl - age) + Math.max(meta.swr ?? 0, meta.sie ?? 0, opts.staleOnError) + (validators ? 86_400 : 0)
  return Math.max(1000, windowS * 1000)
}

/** The first field of `lines` that HTTP/2 allows once and that appears more than once. */
function repeatedSingleValue (lines: HeaderLines): string | undefined {
  const seen = new Set<string>()
  for (const [n] of lines) {
    if (!SINGLE_VALUE.has(n)) continue
    if (seen.has(n)) return n
    seen.add(n)
  }
  return undefined
}

function storedLines (lines: HeaderLines, cc: Directives): HeaderLines {
  const dropped = new Set([...parseList(headerValue(lines, 'connection')), ...qualifiedFields(cc, 'private'), ...qualifiedFields(cc, 'no-cache')])
  return lines.filter(([n]) => !NOT_STORED.has(n) && !dropped.has(n))
}

/** Freshness and reuse facts of a stored response, from its header lines and the Age it arrived with (not stored: it is recomputed when served). */
export function describe (status: number, lines: HeaderLines, requestTime: number, responseTime: number, opts: PolicyOptions, ageHeader: string | string[] | undefined): ResponseMeta {
  const cc = responseDirectives(lines, opts)
  let date = parseHttpDate(headerValue(lines, 'date'))
  if (Number.isNaN(date)) {
    date = responseTime
    // An invalid Date, or more than one, is replaced, not added to: a field HTTP/2 allows
    // once, sent twice, makes Node throw when the response is served over HTTP/2.
    for (let i = lines.length - 1; i >= 0; i--) if (lines[i]![0] === 'date') lines.splice(i, 1)
    lines.push(['date', new Date(responseTime).toUTCString()])
  }
  const ageValue = parseAge(ageHeader)
  const apparent = Math.max(0, responseTime - date) / 1000
  const corrected = ageValue + (responseTime - requestTime) / 1000
  const ia = Math.max(apparent, corrected)
  let fl = lifetime(status, cc, lines, date, opts)
  if (status >= 400) fl = Math.min(fl, opts.maxErrorTtl)
  const meta: ResponseMeta = { s: status, h: lines, rt: responseTime, ia: Number.isFinite(ia) ? ia : -1, fl }
  if (cc.get('no-cache') === true) meta.nc = 1
  if (cc.has('must-revalidate') || cc.has('proxy-revalidate') || cc.has('s-maxage')) meta.mr = 1
  if (cc.has('public') || cc.has('s-maxage')) meta.au = 1
  const swr = deltaSeconds(cc, 'stale-while-revalidate')
  if (swr) meta.swr = swr
  const sie = deltaSeconds(cc, 'stale-if-error')
  if (sie) meta.sie = sie
  return meta
}

function lifetime (status: number, cc: Directives, lines: HeaderLines, date: number, opts: PolicyOptions): number {
  if (cc.has('s-maxage')) return deltaSeconds(cc, 's-maxage') ?? 0
  if (cc.has('max-age')) return deltaSeconds(cc, 'max-age') ?? 0
  const expiresHeader = headerValue(lines, 'expires')
  if (expiresHeader !== undefined) {
    const expires = parseHttpDate(expiresHeader)
    return Number.isNaN(expires) ? 0 : Math.max(0, (expires - date) / 1000)
  }
  if (HEURISTIC.has(status) || cc.has('public')) {
    const lastModified = parseHttpDate(headerValue(lines, 'last-modified'))
    if (!Number.isNaN(lastModified) && lastModified < date) {
      return Math.min(opts.heuristicMaxAge, Math.floor((date - lastModified) / 1000 * opts.heuristicFraction))
    }
  }
  return 0
}

/** Current age of a stored response in seconds (RFC 9111 4.2.3); Infinity when its Age was broken. */
export function currentAge (meta: ResponseMeta, now: number): number {
  if (meta.ia < 0) return Infinity
  return meta.ia + Math.max(0, now - meta.rt) / 1000
}

/** The stored lines updated with a 304's fields (RFC 9111 4.3.4). */
export function mergeNotModified (stored: HeaderLines, fresh: HeaderLines): HeaderLines {
  const replaced = new Set(fresh.map(([n]) => n).filter((n) => !NOT_UPDATED.has(n) && !NOT_STORED.has(n)))
  return [...stored.filter(([n]) => !replaced.has(n)), ...fresh.filter(([n]) => replaced.has(n))]
}

/** Whether a client's conditional request is satisfied by a stored response (answer 304). */
export function notModified (requestHeaders: Record<string, string | string[] | undefined>, stored: HeaderLines): boolean {
  const inm = requestHeaders['if-none-match']
  if (inm !== undefined) {
    const wanted = parseETags(inm)
    const etag = parseETags(headerValue(stored, 'etag'))[0]
    return wanted.includes('*') ? stored.length > 0 : etag !== undefined && wanted.includes(etag)
  }
  const ims = parseHttpDate(requestHeaders['if-modified-since'])
  if (Number.isNaN(ims)) return false
  const lastModified = parseHttpDate(headerValue(stored, 'last-modified'))
  const reference = Number.isNaN(lastModified) ? parseHttpDate(headerValue(stored, 'date')) : lastModified
  return !Number.isNaN(reference) && reference <= ims
}

/** Fields sent with a 304 built from a stored response. */
export function notModifiedLines (stored: HeaderLines): HeaderLines {
  return stored.filter(([n]) => !n.startsWith('content-') || n === 'content-location')
}
