// The Host checks of the framework adapters, in both modes: the host a request names goes
// into the URL the app is given (React Router's Request, the URLs Next builds), so it must
// be one a URL keeps as it is. RFC 3986 alone lets through hosts WHATWG URL refuses (a port
// over 65535, `[1.2.3.4]`, `%00`, `1.2.3.256`: the URL would throw where the app's request is
// built) and hosts it rewrites (`0x7f.1` is `127.0.0.1`, `a%41` is `aa`: the app would see
// another host than the one Fastify's hooks checked).

// RFC 3986 host: an IP literal in brackets, or a reg-name of unreserved characters,
// sub-delims and percent-escapes (an IPv4 address is a reg-name here); then an optional port.
const HOST = /^(\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+)(?::(\d{1,5}))?$/
const MAX_PORT = 65_535

/**
 * True when `host` is an RFC 3986 `host[:port]` with a port up to 65535 and without leading
 * zeros (a URL writes `:080` as `:80`, and drops it as http's default: the app would see
 * another host than the hooks) whose host WHATWG URL parses back to itself (letter case
 * aside: `App.Test` is `app.test`).
 */
export function isValidHost (host: string): boolean {
  const match = HOST.exec(host)
  if (match === null) return false
  const [, name, port] = match
  if (port !== undefined && (Number(port) > MAX_PORT || (port.length > 1 && port[0] === '0'))) return false
  return URL.parse(`http://${name!}`)?.hostname === name!.toLowerCase()
}

/**
 * Whether a request has more than one Host field line, which RFC 9112 3.2 makes a 400. Node
 * keeps the first in `headers` and drops the rest silently (they stay in `rawHeaders`), so
 * the app, its hooks and the HTTP cache's key would name the first host while a proxy or CDN
 * in front may have routed or keyed the request by the last one.
 */
export function hasRepeatedHost (rawHeaders: readonly string[]): boolean {
  let seen = false
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue
    if (seen) return true
    seen = true
  }
  return false
}
