// Limits for the public port that Fastify leaves open by default: every worker faces the
// internet, so a client that trickles its request or streams an endless body must not hold
// a socket or a heap forever. The app's own Fastify options always win.
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, RequestPayload } from 'fastify'
import { Transform, type TransformCallback } from 'node:stream'
import type { Http2SecureServer, Http2Server } from 'node:http2'
import { boundHttp1Fallback } from './http1-fallback-timeouts.ts'
import { boundHttp2Requests } from './http2-request-timeout.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * true: the handler reads the raw request stream itself (a framework adapter), so the
     * runtime's body guard leaves the route alone; the framework's own limits apply.
     */
    rawBody?: boolean
  }
}

/** Whole request (headers and body) received within this many ms, or 408. Fastify's default is 0: none. */
export const DEFAULT_REQUEST_TIMEOUT = 30_000
/** Request headers received within this many ms (Node's default is 60 s): a slowloris client gives up sooner. */
export const DEFAULT_HEADERS_TIMEOUT = 10_000

/**
 * ms between Node's checks of those two timeouts. Node enforces them only when it looks over
 * its connections, every `connectionsCheckingInterval` ms (30 s by default): a client
 * trickling its headers would hold its socket up to 30 s past the headers timeout.
 */
const CONNECTIONS_CHECK_INTERVAL = 1000

/** Methods whose body Fastify never reads: their routes need no body guard. */
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE'])

/** Fastify options with the public-port defaults filled in where the app set none. */
export function withPortDefaults (options: FastifyServerOptions): FastifyServerOptions {
  return { requestTimeout: DEFAULT_REQUEST_TIMEOUT, ...options }
}

/** Applies what Fastify has no option for: the headers timeout (checked every second), and bodyLimit for every parser. */
export function guardPublicPort (app: FastifyInstance, headersTimeout = DEFAULT_HEADERS_TIMEOUT): void {
  const requestTimeout = app.server.requestTimeout
  app.server.headersTimeout = requestTimeout > 0 ? Math.min(headersTimeout, requestTimeout) : headersTimeout
  // Node bounds HTTP/1.1 requests only; an HTTP/2 app's streams are bounded here.
  // (Fastify keeps requestTimeout in initialConfig; its types leave it out.)
  const configured = (app.initialConfig as { requestTimeout?: number }).requestTimeout ?? 0
  if (app.initialConfig.http2 === true && configured > 0) boundHttp2Requests(app.server as unknown as Http2Server, configured)
  // An HTTP/2 server that also speaks HTTP/1.1 (allowHTTP1) checks no timeout on those connections.
  const https = app.initialConfig.https as { allowHTTP1?: boolean } | boolean | null | undefined
  if (app.initialConfig.http2 === true && typeof https === 'object' && https?.allowHTTP1 === true) {
    boundHttp1Fallback(app.server as unknown as Http2SecureServer, configured > 0 ? Math.min(headersTimeout, configured) : headersTimeout, configured)
  }
  // Node starts its checks when the server listens, with the value it has then. An app's
  // server that checks more often is left so; an HTTP/2 server has no such checks.
  const server = app.server as { connectionsCheckingInterval?: number }
  if (typeof server.connectionsCheckingInterval === 'number') {
    server.connectionsCheckingInterval = Math.min(server.connectionsCheckingInterval, CONNECTIONS_CHECK_INTERVAL)
  }
  // Fastify checks bodyLimit for its own parsers only: a parser added for '*' (or any
  // parser that reads the raw stream) gets every byte the client sends. A body with a
  // Content-Length over the limit is refused before a byte is read; a chunked one is cut
  // off at the limit. The guard is a hook of each route that takes a body, not of the
  // instance: Fastify never reads the body of a GET or HEAD, and a preParsing hook on every
  // request cost hello-world's route about 2 % of its throughput (bench/README.md).
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.every((m) => BODYLESS.has(m.toUpperCase()))) return
    const own = route.preParsing
    route.preParsing = own === undefined ? [limitBody] : [limitBody, ...(Array.isArray(own) ? own : [own])]
  })

  function limitBody (request: FastifyRequest, _reply: FastifyReply, payload: RequestPayload, done: (err: Error | null, stream?: RequestPayload) => void): void {
    const length = request.headers['content-length']
    // No body: nothing to bound. Checked first, as request.routeOptions builds a new object
    // on every read.
    if (length === undefined && request.headers['transfer-encoding'] === undefined) { done(null, payload); return }
    const route = request.routeOptions
    if (route.config.rawBody === true) { done(null, payload); return }
    const limit = route.bodyLimit ?? app.initialConfig.bodyLimit ?? 1_048_576
    if (length !== undefined) {
      if (Number(length) > limit) { done(tooLarge(limit)); return }
      // Node's parser never delivers more than Content-Length bytes.
      done(null, payload)
      return
    }
    let seen = 0
    const capped = new Transform({
      transform (chunk: Buffer, _enc, cb: TransformCallback) {
        seen += chunk.length
        if (seen > limit) cb(tooLarge(limit))
        else cb(null, chunk)
      },
    })
    // Fastify's own parsers read receivedEncodedLength from the stream they are given.
    done(null, payload.pipe(capped) as unknown as RequestPayload)
  }
}

function tooLarge (limit: number): Error & { statusCode: number, code: string } {
  return Object.assign(new Error(`Request body is larger than bodyLimit (${limit} bytes)`), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' })
}
