import { STATUS_CODES } from 'node:http'
import { createReadableStreamFromReadable } from '@react-router/node'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { declaredLength, discardUnreadBody, flushEventStreamHead, droppedOnHttp2, hasRepeatedHost, http1Headers, isValidHost } from '@spindle/runtime/pool'
import { coalescedBody } from './coalesced-body.ts'
import { SPINDLE_REACT_ROUTER_BAD_REQUEST, SPINDLE_REACT_ROUTER_URI_TOO_LONG } from './errors.ts'

// A path segment a URL parser resolves away: '.', '..' and their percent-encoded forms.
const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i

/**
 * The most segments a path may have. React Router's matching costs more than linearly in
 * them: one request for `/a/a/…` took 3.8 ms at 128 segments, 6.8 ms at 256, 29 ms at 512,
 * 69 ms at 1,000 and about 2 s at 7,000 (a 14 KB target, within Node's header limit), all
 * that time on the event loop that serves every other request of its thread. No app's
 * routes go this deep; 256 keeps the dearest request within twice a plain one.
 */
export const MAX_PATH_SEGMENTS = 256

/** Whether `path` has more than MAX_PATH_SEGMENTS segments ('/' characters). */
function tooDeep (path: string): boolean {
  let at = -1
  for (let n = 0; n <= MAX_PATH_SEGMENTS; n++) {
    at = path.indexOf('/', at + 1)
    if (at === -1) return false
  }
  return true
}

/**
 * The URL Fastify routed, as a URL for the app. The origin comes from Fastify's protocol and
 * host (which honour trustProxy), the path and query exactly as received. A Host that is not
 * a `host[:port]` a URL keeps as it is (isValidHost), a request with two Host lines (hasRepeatedHost),
 * or a path a URL parser would resolve to another path, is a 400.
 */
export function routedUrl (request: FastifyRequest): URL {
  if (hasRepeatedHost(request.raw.rawHeaders)) throw new SPINDLE_REACT_ROUTER_BAD_REQUEST('more than one Host')
  const host = request.host
  if (!isValidHost(host)) throw new SPINDLE_REACT_ROUTER_BAD_REQUEST('invalid Host')
  const target = request.url
  const q = target.indexOf('?')
  const path = q === -1 ? target : target.slice(0, q)
  if (path[0] !== '/' || path.includes('\\') || DOT_SEGMENT.test(path)) throw new SPINDLE_REACT_ROUTER_BAD_REQUEST('path that does not stay as routed')
  if (tooDeep(path)) throw new SPINDLE_REACT_ROUTER_URI_TOO_LONG(MAX_PATH_SEGMENTS)
  // With trustProxy the protocol is the client's X-Forwarded-Proto: anything but http or https
  // would make the URL throw ('a b') or hand the app another scheme ('javascript').
  const protocol = request.protocol
  if (protocol !== 'http' && protocol !== 'https') throw new SPINDLE_REACT_ROUTER_BAD_REQUEST('invalid protocol')
  const url = new URL(`${protocol}://${host}`)
  // Setting pathname and search keeps them as given (a leading '//' stays a path).
  url.pathname = path
  url.search = q === -1 ? '' : target.slice(q)
  return url
}

/**
 * The Fastify request as a Web Request. The URL is the one Fastify routed and the app's
 * hooks saw: origin from Fastify's protocol and host (which honour trustProxy), the path and
 * query exactly as received, never re-parsed from a string a client could shape. A Host
 * that is not a `host[:port]` a URL keeps as it is, or a path a URL parser would resolve to
 * another path (dot segments, backslashes), is refused with a 400 before the app runs.
 */
export function toWebRequest (request: FastifyRequest, reply: FastifyReply): Request {
  const url = routedUrl(request)
  // As Node's HTTP server gives them: the first of a repeated Authorization or Content-Type,
  // Cookie lines joined with '; ' (what @react-router/express gives an app too).
  // Over HTTP/2 the pseudo-headers are left out (a Headers refuses their names), and the
  // host is the request's :authority.
  const headers = new Headers()
  const raw = request.raw.httpVersionMajor === 2 ? http1Headers(request.raw.headers) : request.raw.headers
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'string') headers.set(name, value)
    else if (value !== undefined) for (const v of value) headers.append(name, v)
  }
  const controller = new AbortController()
  // A client gone before the response ended: HTTP/2's response reads as finished when its
  // stream was reset, so its end is what tells.
  reply.raw.once('close', () => { if (!reply.raw.writableEnded || request.raw.aborted) controller.abort() })
  const init: RequestInit & { duplex?: 'half' } = { method: request.method, headers, signal: controller.signal }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    init.body = createReadableStreamFromReadable(request.raw)
    init.duplex = 'half'
    // The stream pauses the request when the app stops reading (a route without an action
    // reads nothing): the rest would hold up the connection's next request.
    discardUnreadBody(request.raw, reply.raw)
  }
  return new Request(url, init)
}

/**
 * Sends a Web Response through Fastify, streaming its body (the pieces of one turn of the
 * loop joined into one write: coalesced-body.ts), keeping every Set-Cookie and the reason phrase.
 */
export async function sendWebResponse (reply: FastifyReply, response: Response): Promise<void> {
  reply.status(response.status)
  if (response.statusText !== '' && response.statusText !== STATUS_CODES[response.status]) reply.raw.statusMessage = response.statusText
  const version = reply.request.raw.httpVersionMajor
  for (const [name, value] of response.headers) {
    if (name === 'set-cookie' || droppedOnHttp2(version, name)) continue
    reply.header(name, value)
  }
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) reply.header('set-cookie', cookies)
  flushEventStreamHead(reply, response.headers.get('content-type'))
  if (response.body) await reply.send(coalescedBody(response.body, declaredLength(reply.request.method, response.status, response.headers.get('content-length') ?? undefined)))
  else await reply.send()
}
