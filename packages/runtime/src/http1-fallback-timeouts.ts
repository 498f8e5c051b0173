// headersTimeout and requestTimeout for the HTTP/1.1 connections of an HTTP/2 server with
// `https: { allowHTTP1: true }`. Node parses them with its HTTP/1.1 parser but checks
// neither timeout there (only an HTTP/1.1 server looks over its connections), so a client
// that trickled its headers or body held its socket until the session timeout, and for ever
// while it kept sending. Each such connection gets a deadline, looked at every
// CHECK_EVERY ms as Node looks at its own: a request's headers within headersTimeout of the
// connection's start or of its last response's end, and its body within requestTimeout of
// its headers. Past it the connection gets Node's own answer, a 408 with `Connection:
// close`, and is closed; one whose response has begun is closed. An idle kept-alive
// connection is closed the same way after headersTimeout: nothing tells it from one whose
// next request trickles in, and 408 is how a server says it closes an unused connection
// (RFC 9110 15.5.9; browsers then retry on a new one).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2SecureServer } from 'node:http2'
import type { TLSSocket } from 'node:tls'

const CHECK_EVERY = 1000
const TIMED_OUT = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'

interface Connection {
  /** ms (performance.now()) after which the connection is cut; Infinity while the app answers. */
  deadline: number
  /** The response in progress, once a request's headers have come. */
  res: ServerResponse | undefined
}

export function boundHttp1Fallback (server: Http2SecureServer, headersTimeout: number, requestTimeout: number): void {
  const connections = new Map<TLSSocket, Connection>()
  const waitForHead = (): number => headersTimeout > 0 ? performance.now() + headersTimeout : Infinity
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') return
    connections.set(socket, { deadline: waitForHead(), res: undefined })
    socket.once('close', () => { connections.delete(socket) })
  })
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.httpVersionMajor !== 1) return
    const connection = connections.get(req.socket as TLSSocket)
    if (!connection) return
    connection.res = res
    // The headers are in; the body (if any) within requestTimeout, then the app's own time.
    connection.deadline = req.complete || requestTimeout <= 0 ? Infinity : performance.now() + requestTimeout
    if (!req.complete) req.once('end', () => { if (connection.res === res) connection.deadline = Infinity })
    res.once('finish', () => {
      if (connection.res !== res) return
      connection.res = undefined
      connection.deadline = waitForHead()
    })
  })
  const check = setInterval(() => {
    const now = performance.now()
    for (const [socket, connection] of connections) {
      if (now < connection.deadline || socket.destroyed) continue
      connections.delete(socket)
      if (connection.res?.headersSent) { socket.destroy(); continue }
      socket.end(TIMED_OUT)
      // A client that reads nothing could hold the end: the socket goes anyway.
      setTimeout(() => { socket.destroy() }, CHECK_EVERY).unref()
    }
  }, CHECK_EVERY)
  check.unref()
  server.once('close', () => { clearInterval(check) })
}
