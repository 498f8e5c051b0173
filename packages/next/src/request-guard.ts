// What Next is never handed, in either mode: a Host that is not a `host[:port]` a URL keeps
// as it is (it would land in the URLs Next builds: redirects, `request.url` in route
// handlers), and a request target that is not a path (absolute-form 'http://other/x' or
// asterisk-form '*', which Next's own request handling cannot parse: a 500 for a request no
// browser sends), and a request with two Host lines (RFC 9112 3.2: Node keeps the first and
// drops the rest, while a proxy in front may have routed it by the last).
import type { FastifyRequest } from 'fastify'
import { hasRepeatedHost, isValidHost } from '@spindle/runtime/pool'
import { SPINDLE_NEXT_BAD_REQUEST } from './errors.ts'

/** Throws SPINDLE_NEXT_BAD_REQUEST (400) for a request Next must not see. A request without a Host (HTTP/1.0) passes. */
export function assertNextCanServe (request: FastifyRequest): void {
  if (hasRepeatedHost(request.raw.rawHeaders)) throw new SPINDLE_NEXT_BAD_REQUEST('more than one Host')
  const host = request.host as string | undefined
  if ((host !== undefined && host !== '' && !isValidHost(host)) || request.url[0] !== '/') throw new SPINDLE_NEXT_BAD_REQUEST('invalid Host or request target')
}
