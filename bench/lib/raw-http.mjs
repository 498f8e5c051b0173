// A minimal HTTP/1.1 keep-alive client for load generation: one request at a time on one
// TCP connection, a request written from bytes built once, and a response read only as far
// as the load generator needs it (status, the X-Spindle-Shed header, where the body ends).
// Written by hand for a measured reason: on this 2-core machine the generator shares the
// cores with the server, and undici's client (its parser calls back for every chunk of a
// chunked body, and every body is a stream) cost the open loop about 0.4 ms of CPU per
// request against the Next.js example's 100 KB streamed page: at 3x capacity, 0.2 of a core
// taken from the server it measures. A capacity read with autocannon costs about a third
// of that per page, so the open loop's levels and the capacity they are judged against were
// measured with the server given different shares of the machine.
import { connect as tcpConnect } from 'node:net'

const CRLF = Buffer.from('\r\n')
const HEAD_END = Buffer.from('\r\n\r\n')

/** The bytes of a GET request for `path` with `headers`, kept alive. */
export function getRequestBytes (host, path, headers = {}) {
  const lines = [`GET ${path} HTTP/1.1`, `host: ${host}`, 'connection: keep-alive']
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1')
}

/** Opens a TCP connection; resolves once it is established. */
export function openSocket (host, port, timeout) {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port, noDelay: true, timeout })
    socket.once('connect', () => { socket.setTimeout(0); resolve(socket) })
    socket.once('timeout', () => socket.destroy(new Error('connect timeout')))
    socket.once('error', reject)
  })
}

/**
 * One keep-alive connection. `send()` resolves with `{ status, shed }` once the whole
 * response has been read, and rejects if the connection fails or closes first; a socket
 * the server closed is replaced on the next send. The caller sends one request at a time.
 */
export class RawConnection {
  #host
  #port
  #bytes
  #timeout
  #socket = null
  #connecting = null
  // The response being read.
  #pending = null
  #head = null
  #status = 0
  #shed = ''
  #close = false
  /** Body bytes left: of the content, or of the current chunk and its CRLF; -1 until known. */
  #left = -1
  #chunked = false
  /** In a chunked body: 'size' (reading a chunk-size line), 'data', 'trailer'. */
  #phase = 'size'
  #line = ''

  constructor (host, port, bytes, { socket = null, timeout = 5000 } = {}) {
    this.#host = host
    this.#port = port
    this.#bytes = bytes
    this.#timeout = timeout
    if (socket) this.#adopt(socket)
  }

  /** Sends the request. */
  send () {
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject }
      this.#head = null
      this.#left = -1
      this.#chunked = false
      this.#phase = 'size'
      this.#line = ''
      this.#close = false
      this.#shed = ''
      if (this.#socket) { this.#socket.write(this.#bytes); return }
      const attempt = openSocket(this.#host, this.#port, this.#timeout)
      this.#connecting = attempt
      attempt.then(
        (socket) => {
          // A request aborted while its connection opened leaves the socket unused.
          if (this.#connecting !== attempt) { socket.destroy(); return }
          this.#connecting = null
          this.#adopt(socket)
          socket.write(this.#bytes)
        },
        (err) => { if (this.#connecting === attempt) { this.#connecting = null; this.#fail(err) } })
    })
  }

  /** Ends the request in flight with `err` and drops the socket (a timeout, the run's end). */
  abort (err) {
    const socket = this.#socket
    this.#socket = null
    this.#connecting = null
    socket?.destroy()
    this.#fail(err)
  }

  #adopt (socket) {
    this.#socket = socket
    socket.on('data', (data) => this.#read(data, socket))
    const gone = () => {
      // A socket dropped by abort() was replaced or its request already failed.
      if (this.#socket !== socket) return
      this.#socket = null
      this.#fail(new Error('connection closed'))
    }
    socket.on('close', gone)
    socket.on('error', () => {})
  }

  #fail (err) {
    const p = this.#pending
    this.#pending = null
    p?.reject(err)
  }

  #done () {
    const p = this.#pending
    this.#pending = null
    if (this.#close) { const s = this.#socket; this.#socket = null; s?.destroy() }
    p?.resolve({ status: this.#status, shed: this.#shed })
  }

  #read (data, socket) {
    if (!this.#pending || socket !== this.#socket) return
    let at = 0
    if (this.#left === -1) {
      // The head, maybe split over packets: what came of it so far waits in #head.
      const buf = this.#head ? Buffer.concat([this.#head, data]) : data
      const end = buf.indexOf(HEAD_END)
      if (end === -1) { this.#head = buf; return }
      this.#head = null
      this.#parseHead(buf.latin1Slice(0, end))
      data = buf
      at = end + 4
    }
    if (this.#chunked) this.#readChunks(data, at)
    else {
      this.#left -= data.length - at
      if (this.#left <= 0) this.#done()
    }
  }

  #parseHead (text) {
    this.#status = Number(text.slice(9, 12))
    let length = 0
    for (const line of text.split('\r\n')) {
      const colon = line.indexOf(':')
      if (colon === -1) continue
      const name = line.slice(0, colon).toLowerCase()
      const value = line.slice(colon + 1).trim()
      if (name === 'content-length') length = Number(value)
      else if (name === 'transfer-encoding') this.#chunked = value.toLowerCase().includes('chunked')
      else if (name === 'x-spindle-shed') this.#shed = value
      else if (name === 'connection') this.#close = value.toLowerCase() === 'close'
    }
    this.#left = this.#chunked ? 0 : length
  }

  #readChunks (data, at) {
    while (at < data.length) {
      if (this.#phase === 'data') {
        const take = Math.min(this.#left, data.length - at)
        this.#left -= take
        at += take
        if (this.#left === 0) this.#phase = 'size'
        continue
      }
      // A chunk-size line, or (after the last chunk) trailer lines up to an empty one.
      let line
      if (this.#line.endsWith('\r') && data[at] === 10) {
        // The line's CR ended the last packet and its LF starts this one.
        line = this.#line.slice(0, -1)
        at += 1
      } else {
        const eol = data.indexOf(CRLF, at)
        if (eol === -1) { this.#line += data.latin1Slice(at, data.length); return }
        line = this.#line + data.latin1Slice(at, eol)
        at = eol + 2
      }
      this.#line = ''
      if (this.#phase === 'trailer') {
        if (line === '') { this.#done(); return }
        continue
      }
      const size = parseInt(line, 16)
      if (size === 0) { this.#phase = 'trailer'; continue }
      this.#left = size + 2
      this.#phase = 'data'
    }
  }
}
