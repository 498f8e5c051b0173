// What is left of a request body the app did not read, once its response has gone. Those
// bytes come before the connection's next request, and Node's parser reads no further while
// the request stream is paused: the next request would wait until the request timeout
// (without one, for ever). Node drops such a body itself (`req._dump()`), but only when
// nothing ever read from the request; an adapter that streams the body to a framework has
// read from it, so the rest is dropped here.
//
// Bounded: past DISCARD_LIMIT bytes (an endless chunked body, a large upload to a route that
// takes none) the connection is closed instead, or a client could keep the server reading
// for as long as it likes. Not at once: a socket closed with bytes of the client's still
// unread is reset, and a reset can reach the client before it read its answer. So the
// server half-closes (its answer, then FIN), goes on dropping what arrives while the client
// sees the end and closes its side, and ends the socket LINGER ms later in any case.
import type { IncomingMessage, ServerResponse } from 'node:http'

/** Bytes of an unread body dropped after the response before the connection is closed instead. */
export const DISCARD_LIMIT = 1024 * 1024
/** ms a connection closed for an unread body still drops what arrives before it is ended. */
const LINGER = 2000

/** Once `res` has finished, drops the rest of `req`'s body: up to DISCARD_LIMIT bytes, then the connection is closed. */
export function discardUnreadBody (req: IncomingMessage, res: ServerResponse): void {
  // HTTP/2 (Fastify's `http2: true`): an unread body holds up only its own stream; the next
  // request comes on a stream of its own.
  if (req.httpVersionMajor !== 1) return
  res.once('finish', () => {
    if (req.readableEnded || req.destroyed) return
    const socket = req.socket
    let left = DISCARD_LIMIT
    // As Node's own _dump(): whoever was reading (the framework's body stream) is done with it.
    req.removeAllListeners('data')
    req.on('data', (chunk: Buffer) => {
      left -= chunk.length
      if (left >= 0 || socket.writableEnded) return
      socket.end()
      setTimeout(() => { socket.destroy() }, LINGER).unref()
    })
    req.resume()
  })
}
