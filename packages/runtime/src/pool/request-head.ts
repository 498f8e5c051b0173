import type { TLSSocket } from 'node:tls'
import type { FastifyRequest } from 'fastify'
import type { RequestHead } from './protocol.ts'

/** The head of `request` for a pool thread; `url` is the absolute URL the adapter validated. */
export function requestHead (request: FastifyRequest, url: string): RequestHead {
  const raw = request.raw
  return {
    method: request.method,
    url,
    rawHeaders: withoutPseudoHeaders(raw.rawHeaders),
    remoteAddress: raw.socket?.remoteAddress ?? '',
    encrypted: Boolean((raw.socket as TLSSocket | undefined)?.encrypted),
    httpVersion: raw.httpVersion,
    hasBody: request.method !== 'GET' && request.method !== 'HEAD',
  }
}

/**
 * An HTTP/2 request's raw list has its pseudo-headers (`:method`, `:path`, `:authority`…),
 * which no framework takes as header names (a Web Headers refuses them): they are left out,
 * and `:authority` becomes the `host` an HTTP/1 request would carry, if it has none. An
 * HTTP/1 request's list is returned as it is.
 */
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
