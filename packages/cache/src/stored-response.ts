import type { FastifyReply } from 'fastify'
import { currentAge, type HeaderLines, notModified, notModifiedLines, type ResponseMeta, SINGLE_VALUE } from './cache-policy.ts'
import { cutFromPart, heldPart, ifRangeMatches, parseRange } from './ranges.ts'
import type { StoreEntry } from './shared-store.ts'
import { type CacheOutcome, stampOutcome } from './outcome-stamp.ts'

/** A stored response found for a request: the store key it lives under (primary or variant) and its parts. */
export interface Found {
  key: string
  entry: StoreEntry
  meta: ResponseMeta
}

// Fastify computes these for the bytes it sends; the connection-specific fields are the
// connection's own, and illegal over HTTP/2 (RFC 9113 8.2.2: Node throws, and the process
// goes down). A route's answer to a revalidation (fastify.inject, HTTP/1.1) may carry them,
// meant for HTTP/1.1, and this client may speak HTTP/2.
const WIRE_ONLY = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'http2-settings', 'te'])

// A field HTTP/2 allows once is sent once, the last value winning (as a later setHeader
// would): an entry already in a store (Redis is shared by processes of every version), the
// fields a 304 merged in, or a revalidation's answer (HTTP/1.1) may repeat one, and Node
// throws over HTTP/2.
function toHeaders (lines: HeaderLines): Record<string, string | string[]> {
  const h: Record<string, string | string[]> = {}
  for (const [n, v] of lines) {
    if (WIRE_ONLY.has(n)) continue
    if (SINGLE_VALUE.has(n)) {
      h[n] = v
      continue
    }
    const cur = h[n]
    h[n] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v]
  }
  return h
}

/** Sends a response through Fastify (so onSend/onResponse hooks and logging see it). */
export function sendLines (reply: FastifyReply, status: number, lines: HeaderLines, body: Buffer | undefined, statusHeader: string | false, label: CacheOutcome, extra?: Record<string, string>): void {
  stampOutcome(reply.request.raw, label)
  const headers = toHeaders(lines)
  if (extra) Object.assign(headers, extra)
  if (statusHeader) headers[statusHeader] = label
  reply.code(status).headers(headers)
  // Fastify would add a content type to a body that had none.
  if (!('content-type' in headers)) reply.removeHeader('content-type')
  reply.send(body)
}

/** Answers from a stored response: 304 when the client's validators match, else the full response with Age. */
export function serveStored (reply: FastifyReply, found: Found, statusHeader: string | false, label: CacheOutcome, extraLines: HeaderLines = []): void {
  const { meta } = found
  const lines = extraLines.length ? [...meta.h, ...extraLines] : meta.h
  const age = String(Math.floor(Math.min(currentAge(meta, Date.now()), 2 ** 31)))
  const request = reply.request.raw.headers
  if (notModified(request, meta.h)) {
    sendLines(reply, 304, notModifiedLines(lines), undefined, statusHeader, label, { age })
    return
  }
  const body = found.entry.value
  const range = meta.s === 200 && typeof request.range === 'string' && ifRangeMatches(request['if-range'], meta.h) ? parseRange(request.range, body.length) : undefined
  if (range === 'unsatisfiable') {
    sendLines(reply, 416, notModifiedLines(lines), undefined, statusHeader, label, { age, 'content-range': `bytes */${body.length}` })
    return
  }
  if (range) {
    const [start, end] = range
    sendLines(reply, 206, lines, body.subarray(start, end + 1), statusHeader, label, { age, 'content-range': `bytes ${start}-${end}/${body.length}` })
    return
  }
  sendLines(reply, meta.s, lines, body, statusHeader, label, { age })
}


/**
 * Answers a Range request from a stored 206: as stored when the request asks for the very
 * range that produced it, else the asked part cut from the bytes held. False (nothing
 * sent) when the stored part cannot answer it.
 */
export function servePart (reply: FastifyReply, found: Found, statusHeader: string | false, label: CacheOutcome): boolean {
  const { meta } = found
  const request = reply.request.raw.headers
  if (typeof request.range !== 'string' || !ifRangeMatches(request['if-range'], meta.h)) return false
  if (request['if-none-match'] !== undefined || request['if-modified-since'] !== undefined) return false
  const age = String(Math.floor(Math.min(currentAge(meta, Date.now()), 2 ** 31)))
  const body = found.entry.value
  if (meta.rq === request.range.trim()) {
    sendLines(reply, 206, meta.h, body, statusHeader, label, { age })
    return true
  }
  const held = heldPart(meta.h, body.length)
  const cut = held && cutFromPart(request.range, held)
  if (!held || !cut) return false
  const [first, last] = cut
  sendLines(reply, 206, meta.h, body.subarray(first - held.start, last - held.start + 1), statusHeader, label, { age, 'content-range': `bytes ${first}-${last}/${held.size}` })
  return true
}
