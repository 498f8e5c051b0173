// Canonical forms of the request's authority and path (RFC 3986 6.2.2), so that one
// resource has one cache key and one set of path tags however a client spells it.

// host = IP-literal / IPv4address / reg-name, then an optional port (RFC 3986 3.2.2, 3.2.3).
const REG_NAME = /^(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*$/i
const IP_LITERAL = /^\[(?:[0-9a-f:.]+|v[0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]$/i
const PORT = /^\d{0,5}$/

/**
 * The authority a request names: its Host header, or, over HTTP/2, its `:authority` when it
 * has no Host (HTTP/2 clients send only that, and Node hands the app `:authority` as the
 * host). Both, different: two values, which normalizeHost refuses (RFC 9113 8.3.1).
 */
export function requestHost (headers: Readonly<Record<string, string | string[] | undefined>>): string | string[] | undefined {
  const host = headers.host
  const authority = headers[':authority']
  if (authority === undefined) return host
  if (host === undefined) return authority
  return host === authority ? host : [String(host), String(authority)]
}

/**
 * The Host header in canonical form: lower-cased, the scheme's default port dropped. ''
 * when absent (HTTP/1.0); undefined when it is not a valid `host[:port]` (the request must
 * be refused: a Host such as `app.com/blog` would otherwise change the key's path).
 */
export function normalizeHost (value: string | string[] | undefined, encrypted: boolean): string | undefined {
  if (value === undefined) return ''
  if (Array.isArray(value)) return undefined
  const colon = value.lastIndexOf(':')
  const bracket = value.lastIndexOf(']')
  let host = value
  let port = ''
  if (colon > bracket) {
    host = value.slice(0, colon)
    port = value.slice(colon + 1)
    if (!PORT.test(port) || (port !== '' && Number(port) > 65_535)) return undefined
  }
  if (host === '' && value !== '') return undefined
  if (!(host.startsWith('[') ? IP_LITERAL.test(host) : REG_NAME.test(host))) return undefined
  host = host.toLowerCase()
  if (port !== '') port = String(Number(port))
  if (port === '' || port === (encrypted ? '443' : '80')) return host
  return `${host}:${port}`
}

const UNRESERVED = /[A-Za-z0-9\-._~]/
const HEX = /^[0-9a-fA-F]{2}$/

/**
 * A path in canonical form: percent-encoded unreserved characters decoded, other
 * percent-encodings upper-cased, dot segments removed (RFC 3986 5.2.4).
 */
export function normalizePath (path: string): string {
  let decoded = path
  if (path.includes('%')) {
    decoded = ''
    for (let i = 0; i < path.length; i++) {
      const c = path[i]!
      const hex = c === '%' ? path.slice(i + 1, i + 3) : ''
      if (hex.length === 2 && HEX.test(hex)) {
        const ch = String.fromCharCode(parseInt(hex, 16))
        decoded += UNRESERVED.test(ch) ? ch : '%' + hex.toUpperCase()
        i += 2
      } else decoded += c
    }
  }
  return decoded.includes('/.') ? removeDotSegments(decoded) : decoded
}

function removeDotSegments (path: string): string {
  const segments = path.split('/')
  const out: string[] = []
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!
    const last = i === segments.length - 1
    if (seg === '.' || seg === '..') {
      if (seg === '..' && out.length > 1) out.pop()
      // A path ending in a dot segment names the directory: keep its trailing slash.
      if (last) out.push('')
    } else out.push(seg)
  }
  const joined = out.join('/')
  return joined.startsWith('/') ? joined : '/' + joined
}

/** Splits a request target into its canonical path and its query (with '?', unchanged; '' when none). */
export function splitTarget (url: string): { path: string, query: string } {
  const q = url.indexOf('?')
  const rawPath = q < 0 ? url : url.slice(0, q)
  return { path: normalizePath(rawPath === '' ? '/' : rawPath), query: q < 0 ? '' : url.slice(q) }
}
