// requestTimeout for HTTP/2 streams. Node enforces it (and the headers timeout) on HTTP/1.1
// connections only: over HTTP/2 a client could open streams and never end their bodies,
// holding each stream and the handler that waits for its body for as long as the session
// lives (and a session that sends anything at all never idles out). Here each stream whose
// request is not whole within the timeout is answered 408 and closed, as Node answers a slow
// HTTP/1.1 request; one whose response has begun already is reset.
import { constants, type Http2SecureServer, type Http2Server, type ServerHttp2Stream } from 'node:http2'

export function boundHttp2Requests (server: Http2Server | Http2SecureServer, timeoutMs: number): void {
  server.on('stream', (stream: ServerHttp2Stream) => {
    // HEADERS with END_STREAM: no body to wait for, the request is whole.
    if (stream.endAfterHeaders) return
    const timer = setTimeout(() => { cut(stream) }, timeoutMs)
    timer.unref()
    stream.once('close', () => { clearTimeout(timer) })
  })
}

function cut (stream: ServerHttp2Stream): void {
  // remoteClose: the client ended its side, the whole request arrived.
  if (stream.destroyed || stream.closed || stream.state.remoteClose === 1) return
  if (stream.headersSent) { stream.close(constants.NGHTTP2_CANCEL); return }
  // An empty 408, as Node sends over HTTP/1.1, then RST_STREAM(NO_ERROR): the client stops
  // sending its body (RFC 9113, 8.1).
  stream.respond({ ':status': 408, 'content-length': '0' }, { endStream: true })
  stream.close(constants.NGHTTP2_NO_ERROR)
}
