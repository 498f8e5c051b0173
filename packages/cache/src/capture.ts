import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { type HeaderLines, toLines } from './cache-policy.ts'

export interface Captured {
  status: number
  lines: HeaderLines
  body: Buffer
}

type WriteHead = ServerResponse['writeHead']

/** Header lines a `writeHead(status, [message], [headers])` call sends, merged with those set before. */
function headLines (res: ServerResponse, args: unknown[]): HeaderLines {
  const merged: Record<string, unknown> = { ...res.getHeaders() }
  const extra = typeof args[1] === 'string' ? args[2] : args[1]
  if (Array.isArray(extra)) {
    // Either [[name, value], ...] or a flat [name, value, name, value, ...].
    const pairs = Array.isArray(extra[0]) ? extra as Array<[string, string]> : Array.from({ length: extra.length / 2 }, (_, i) => [extra[i * 2], extra[i * 2 + 1]] as [string, string])
    // As Node sends them: these replace the fields of the same names set before, repeats kept.
    const named = new Set(pairs.map(([n]) => String(n).toLowerCase()))
    const lines = toLines(merged).filter(([n]) => !named.has(n))
    for (const [n, v] of pairs) lines.push([String(n).toLowerCase(), String(v)])
    return lines
  }
  if (extra && typeof extra === 'object') {
    for (const [n, v] of Object.entries(extra as OutgoingHttpHeaders)) merged[n.toLowerCase()] = v
  }
  return toLines(merged)
}

/**
 * Calls `onHead` with the status and header lines just before they are sent, whether
 * Fastify sends them or the route writes to the raw response itself (Next.js does).
 * `onHead` may still change headers on `res`.
 */
export function interceptHead (res: ServerResponse, onHead: (status: number, lines: HeaderLines) => void): void {
  const original = res.writeHead
  let done = false
  const fire = (args: unknown[]): void => {
    if (done) return
    done = true
    onHead(typeof args[0] === 'number' ? args[0] : res.statusCode, headLines(res, args))
  }
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    fire(args)
    return (original as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as WriteHead
  // A response that never calls writeHead sends its head on the first write or end.
  for (const method of ['write', 'end'] as const) {
    const fn = res[method] as (...a: unknown[]) => unknown
    res[method] = function (this: ServerResponse, ...args: unknown[]) {
      if (!this.headersSent) fire([this.statusCode])
      return fn.apply(this, args)
    } as never
  }
}

/**
 * Tees a response: everything still goes to the client as written, and a copy of the
 * status, headers and body (up to `limit` bytes) is handed to `done` when the route ends
 * it; `done(undefined)` when the connection closed first, the body was too large, or
 * `onHead` returned false (the head shows the response is not wanted: no body is copied).
 */
export function captureResponse (res: ServerResponse, limit: number, onHead: (status: number, lines: HeaderLines) => boolean | void, done: (captured: Captured | undefined) => void): void {
  let head: { status: number, lines: HeaderLines } | undefined
  const chunks: Buffer[] = []
  let size = 0
  let overflow = false
  const keep = (chunk: unknown, encoding: unknown): void => {
    if (overflow || chunk == null || typeof chunk === 'function') return
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding as BufferEncoding : 'utf8') : Buffer.from(chunk as Uint8Array)
    size += buf.length
    if (size > limit) { overflow = true; chunks.length = 0 } else chunks.push(buf)
  }
  let settled = false
  const settle = (value: Captured | undefined): void => {
    if (settled) return
    settled = true
    done(value)
  }
  const write = res.write as (...a: unknown[]) => boolean
  const end = res.end as (...a: unknown[]) => ServerResponse
  // HTTP/2's response writes the chunk given to end() through its own write(): kept once.
  let ending = false
  res.write = function (this: ServerResponse, ...args: unknown[]) {
    if (!ending) keep(args[0], args[1])
    return write.apply(this, args)
  } as never
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    keep(args[0], args[1])
    ending = true
    let out: ServerResponse
    try {
      out = end.apply(this, args)
    } finally {
      ending = false
    }
    // The response is whole once the route ends it: store it now, not when the socket has
    // drained, so the next request (maybe on this very connection) already finds it.
    if (head && !this.destroyed) settle(overflow ? undefined : { status: head.status, lines: head.lines, body: Buffer.concat(chunks, size) })
    return out
  } as never
  interceptHead(res, (status, lines) => {
    head = { status, lines }
    if (onHead(status, lines) === false) {
      overflow = true
      chunks.length = 0
    }
  })
  res.once('close', () => settle(undefined))
}
