// A request written byte for byte (no client library to tidy its target or headers) and its
// answer read to the close: for tests that compare what servers make of the same bytes, and
// for requests pipelined on one connection.
import { once } from 'node:events'
import { connect } from 'node:net'

export interface RawAnswer {
  readonly statusLine: string
  /** Lower-cased names, in the order sent, a repeated header once per line. */
  readonly headers: Array<[string, string]>
  /** The body, de-chunked. */
  readonly body: string
}

/** Sends `head` (ending in a blank line, with `Connection: close`) to 127.0.0.1:`port`. */
export async function rawRequest (port: number, head: string): Promise<RawAnswer> {
  const socket = connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  socket.on('data', (c: Buffer) => chunks.push(c))
  socket.write(head)
  await once(socket, 'close')
  const text = Buffer.concat(chunks).toString('latin1')
  const split = text.indexOf('\r\n\r\n')
  const lines = text.slice(0, split).split('\r\n')
  const headers = lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string])
  let body = text.slice(split + 4)
  if (headers.some(([n, v]) => n === 'transfer-encoding' && v === 'chunked')) {
    let decoded = ''
    for (let at = 0; ;) {
      const eol = body.indexOf('\r\n', at)
      const size = parseInt(body.slice(at, eol), 16)
      if (!(size > 0)) break
      decoded += body.slice(eol + 2, eol + 2 + size)
      at = eol + 2 + size + 2
    }
    body = decoded
  }
  return { statusLine: lines[0]!, headers, body }
}

/** Every value of header `name` in `answer`, in order. */
export function headerValues (answer: RawAnswer, name: string): string[] {
  return answer.headers.filter(([n]) => n === name).map(([, v]) => v)
}

/**
 * A POST of `size` bytes to `post`, then a GET of `get` (with `Connection: close`) pipelined
 * behind it on one connection: the status codes answered until the server closes the
 * connection (`closed`) or `wait` ms pass.
 */
export function postThenGet (port: number, post: string, size: number, get: string, wait = 5000): Promise<{ statuses: string[], closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    const done = (closed: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve({ statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]!), closed })
    }
    const timer = setTimeout(() => done(false), wait)
    socket.on('data', (c: Buffer) => { text += c.toString('latin1') })
    socket.on('close', () => done(true))
    socket.on('error', () => {})
    socket.write(`POST ${post} HTTP/1.1\r\nHost: app.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${size}\r\n\r\n`)
    socket.write(Buffer.alloc(size, 97))
    socket.write(`GET ${get} HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n\r\n`)
  })
}

/**
 * Hosts RFC 3986 allows that WHATWG URL refuses (building the app's URL would throw) or reads
 * as another host (the app would not see the host the hooks saw): the adapters answer 400.
 */
export const HOSTS_A_URL_CHANGES = ['x:99999', 'x:65536', 'x:080', 'x:00443', '[:::::]', '[1.2.3.4]', '%00', 'a%2fb', 'a%20b', '1.2.3.256', '0x1ffffffff', '0x7f.1']

/**
 * Sends the requests `heads(host)` gives for each of HOSTS_A_URL_CHANGES (each with
 * `Connection: close`); returns the answers that were not a 400 with the error `code`.
 */
export async function badHostAnswers (port: number, code: string, heads: (host: string) => string[]): Promise<string[]> {
  const wrong: string[] = []
  for (const host of HOSTS_A_URL_CHANGES) {
    for (const head of heads(host)) {
      const answer = await rawRequest(port, head)
      let answered: unknown
      try {
        answered = (JSON.parse(answer.body) as { code?: unknown }).code
      } catch {
        answered = answer.body.slice(0, 80)
      }
      if (answer.statusLine !== 'HTTP/1.1 400 Bad Request' || answered !== code) wrong.push(`${host}: ${answer.statusLine} ${String(answered)}`)
    }
  }
  return wrong
}

/** A seeded xorshift generator of numbers in [0, 1): a test that fails replays. */
export function seededRandom (seed: number): () => number {
  return () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed / 4294967296 }
}

/**
 * A client that leaves at any moment: it sends `head` and `body` (for an upload, part of what
 * the head announced), stops reading 40 % of the time so the response backs up, and destroys
 * its socket within 80 ms. Resolves once the socket has closed.
 */
export function leavingClient (port: number, head: string, body: Buffer | undefined, random: () => number): Promise<void> {
  return new Promise<void>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.on('close', () => resolve())
    socket.write(head)
    if (body) socket.write(body)
    if (random() < 0.4) socket.pause()
    setTimeout(() => socket.destroy(), random() * 80)
  })
}

/**
 * Sends a GET with an Upgrade header to `base` over a raw socket and resolves with the
 * answer's status line and body: 'no answer' if there is none within `ms` (the socket left open).
 */
export function upgradeRequest (base: string, path: string, upgrade: 'h2c' | 'websocket', ms = 5_000): Promise<{ status: string, body: string }> {
  const url = new URL(base)
  const headers = upgrade === 'h2c'
    ? 'Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n'
    : 'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname)
    let got = ''
    const done = (): void => {
      clearTimeout(timer)
      socket.destroy()
      const [head = '', body = ''] = got.split('\r\n\r\n')
      resolve({ status: got ? head.split('\r\n')[0]! : 'no answer', body })
    }
    const timer = setTimeout(done, ms)
    socket.on('data', (chunk: Buffer) => { got += chunk.toString('latin1') })
    socket.on('close', done)
    socket.on('error', () => {})
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close, Upgrade\r\n${headers}\r\n`)
  })
}

/** One HTTP/2 GET on `session`: status, headers and body, or 'no answer' as the status when none came within `ms`. */
export function h2Get (session: import('node:http2').ClientHttp2Session, path: string, headers: Record<string, string> = {}, ms = 10_000): Promise<{ status: number | 'no answer', headers: Record<string, unknown>, body: string }> {
  return new Promise((resolve) => {
    const stream = session.request({ ':path': path, ...headers })
    let head: Record<string, unknown> = {}
    let body = ''
    const timer = setTimeout(() => { stream.close(); resolve({ status: 'no answer', headers: head, body }) }, ms)
    stream.on('response', (h) => { head = h })
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => { body += chunk })
    stream.on('end', () => { clearTimeout(timer); resolve({ status: Number(head[':status']), headers: head, body }) })
    stream.on('error', () => { clearTimeout(timer); resolve({ status: 'no answer', headers: head, body }) })
  })
}
