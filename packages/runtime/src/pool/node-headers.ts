// A request's headers as Node's HTTP server gives them to an app (`IncomingMessage#headers`),
// for a Web Request built from the raw list: of a header that must have one value (these
// names) the first is kept, Cookie lines are joined with '; ', every other repeated header
// keeps each value (a Web Headers joins them with ', ').
const SINGLE_VALUE = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host',
  'if-modified-since', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards',
  'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent',
])

/** `rawHeaders` (name, value, name, value...) as Headers with Node's rules for repeats. */
export function headersLikeNode (rawHeaders: readonly string[]): Headers {
  const headers = new Headers()
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase()
    const value = rawHeaders[i + 1]!
    if (!headers.has(name)) headers.append(name, value)
    else if (name === 'cookie') headers.set(name, `${headers.get(name)!}; ${value}`)
    else if (!SINGLE_VALUE.has(name)) headers.append(name, value)
  }
  return headers
}
