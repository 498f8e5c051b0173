// What a framework written for HTTP/1.1 needs of an HTTP/2 request's headers: no
// pseudo-headers (`:path`, `:authority`…, which a Web Headers refuses and Next.js does not
// expect), and the `host` an HTTP/1.1 request would carry, taken from `:authority`.
import type { IncomingHttpHeaders } from 'node:http'

/** The raw list (name, value, …) without pseudo-headers; an HTTP/1 request's list as it is. */
export function withoutPseudoHeaders (rawHeaders: string[]): string[] {
  if (rawHeaders.length === 0 || !rawHeaders[0]!.startsWith(':')) return rawHeaders
  const out: string[] = []
  let authority: string | undefined
  let host = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    if (name === ':authority') authority = rawHeaders[i + 1]
    else if (!name.startsWith(':')) {
      if (name.toLowerCase() === 'host') host = true
      out.push(name, rawHeaders[i + 1]!)
    }
  }
  if (!host && authority !== undefined) out.unshift('host', authority)
  return out
}

/** The headers object without pseudo-headers, as a plain object (Next.js calls hasOwnProperty on it). */
export function http1Headers (headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) if (!name.startsWith(':')) out[name] = value
  const authority = headers[':authority']
  if (out.host === undefined && typeof authority === 'string') out.host = authority
  return out
}
