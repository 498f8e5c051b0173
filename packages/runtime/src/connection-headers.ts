// HTTP/2 has no connection-specific header fields (RFC 9113 8.2.2): Node refuses a response
// that carries one, and the stream fails. An app written for HTTP/1.1 (or a framework that
// copies a proxied response) may set them; over HTTP/2 they are dropped.
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade'])

/** Whether a response header `name` (lower case) must not be sent on this request's HTTP/2 stream. */
export function droppedOnHttp2 (httpVersionMajor: number, name: string): boolean {
  return httpVersionMajor === 2 && CONNECTION_SPECIFIC.has(name)
}
