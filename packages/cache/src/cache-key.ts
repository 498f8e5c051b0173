import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { normalizeAcceptLanguage } from './accept-language.ts'
import { normalizeHost, requestHost, splitTarget } from './url-normalize.ts'

/** What a cache key is computed from: the raw request line and headers, before any proxy trust is applied. */
export interface KeyRequest {
  /** The request target: path and query. The plugin passes the path in canonical form (see url-normalize). */
  readonly url: string
  /** The Host in canonical form (lower-cased, default port dropped), when the caller already checked it. */
  readonly host?: string
  readonly headers: IncomingHttpHeaders
  /** True when the connection itself is TLS. */
  readonly encrypted: boolean
}

export type KeyFunction = (request: KeyRequest) => string

/**
 * Request headers that frameworks use to rebuild the public URL (Fastify's trustProxy,
 * Next.js, React Router). They change what a page says about itself, so by default each
 * one that is present becomes part of the key: a request that forges one gets its own
 * entry and can never change what others are served.
 */
export const DEFAULT_KEY_HEADERS: readonly string[] = Object.freeze([
  'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port', 'x-forwarded-prefix', 'x-forwarded-server',
  'forwarded', 'x-host', 'x-original-host', 'x-original-url', 'x-rewrite-url', 'x-forwarded-scheme', 'x-url-scheme',
])

/** Requests with these headers are never answered from, nor stored in, the cache: they change the method. */
export const BYPASS_HEADERS: readonly string[] = Object.freeze(['x-http-method-override', 'x-http-method', 'x-method-override'])

function headerText (value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : value ?? ''
}

/**
 * The default key: `scheme://host/path?query`, from the connection and the Host header
 * (never from forwarded headers), host and path in canonical form, then one
 * `\nname: value` line per key header present. An invalid Host keys as `\0invalid`
 * (the plugin refuses such requests before any lookup).
 */
export function defaultKey (keyHeaders: readonly string[]): KeyFunction {
  return (req) => {
    const host = req.host ?? normalizeHost(requestHost(req.headers), req.encrypted) ?? '\0invalid'
    const { path, query } = splitTarget(req.url)
    let key = `${req.encrypted ? 'https' : 'http'}://${host}${path}${query}`
    for (const name of keyHeaders) {
      const value = req.headers[name]
      if (value !== undefined) key += `\n${name}: ${headerText(value)}`
    }
    return key
  }
}

/**
 * The key of a variant: the primary key, the Vary record's id, and the request's values of
 * the Vary fields (`Accept-Language` in its canonical form, see accept-language.ts).
 * `credentialHeaders` (lower-case) are the plugin's, whose values are secrets as much as a
 * cookie's. `language` replaces the request's Accept-Language with one language: the key
 * under which a variant is found by the language it declares in Content-Language.
 */
export function variantKey (primary: string, varyId: string, fields: readonly string[], headers: IncomingHttpHeaders, credentialHeaders: readonly string[], language?: string): string {
  return `${primary}\n\0vary ${varyId}\n` + fields.map((f) => {
    const secret = SECRET_FIELDS.has(f) || credentialHeaders.includes(f)
    return `${f}=${encodeURIComponent(fieldValue(f, headers[f], secret, language))}`
  }).join('&')
}

// Fields whose values are secrets, besides the configured credential headers: a response
// that varies on one is keyed by a digest of the value, so a session token or an API key
// never appears in a key (with the fleet tier keys are Redis key names, which SCAN,
// MONITOR and slow logs show to whoever operates Redis).
const SECRET_FIELDS = new Set(['cookie', 'authorization', 'proxy-authorization'])

function fieldValue (name: string, value: string | string[] | undefined, secret: boolean, language: string | undefined): string {
  if (name === 'accept-language') {
    if (language !== undefined) return `\0lang ${language}`
    const canonical = normalizeAcceptLanguage(value)
    if (canonical !== undefined) return `\0al ${canonical}`
  }
  if (secret && value !== undefined) return `\0sha256 ${createHash('sha256').update(normalize(value)).digest('base64url')}`
  return normalize(value)
}

function normalize (value: string | string[] | undefined): string {
  if (value === undefined) return '\0'
  return headerText(value).split(',').map((s) => s.trim().replace(/\s+/g, ' ')).join(',')
}
