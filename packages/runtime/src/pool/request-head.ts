import type { TLSSocket } from 'node:tls'
import type { FastifyRequest } from 'fastify'
import type { RequestHead } from './protocol.ts'
import { withoutPseudoHeaders } from '../http2-headers.ts'

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

