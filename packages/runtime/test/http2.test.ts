import { afterEach, describe, expect, it } from 'vitest'
import { connect, type ClientHttp2Session } from 'node:http2'
import { connect as tlsConnect } from 'node:tls'
import { once } from 'node:events'
import { serve, type SpindleServer } from '@spindle/runtime'
import { fixture, waitFor } from './helpers.ts'

// Far above what these drains take: a drain that waits it out has failed.
const base = { app: fixture('http2-app.js'), port: 0, controlPort: false, handleSignals: false, host: '127.0.0.1', workers: 1, shutdownTimeout: 10_000 } as const

let server: SpindleServer | undefined
const sessions: ClientHttp2Session[] = []
afterEach(async () => {
  for (const session of sessions.splice(0)) session.destroy()
  await server?.close()
  server = undefined
})

function session (url: string): ClientHttp2Session {
  const s = connect(url)
  s.on('error', () => {})
  sessions.push(s)
  return s
}

/** A whole HTTP/2 request on `s` (a GET, or a POST of `upload`): status and body. */
function h2get (s: ClientHttp2Session, path: string, upload?: string): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const stream = s.request(upload === undefined ? { ':path': path } : { ':path': path, ':method': 'POST', 'content-type': 'text/plain' }, { endStream: upload === undefined })
    if (upload !== undefined) stream.end(upload)
    let status = 0
    let body = ''
    stream.setEncoding('utf8')
    stream.on('response', (headers) => { status = Number(headers[':status']) })
    stream.on('data', (chunk: string) => { body += chunk })
    stream.on('end', () => resolve({ status, body }))
    stream.on('error', reject)
  })
}

describe('HTTP/2 apps', () => {
  it('shut down without waiting out shutdownTimeout: every session gets GOAWAY and the stream in flight finishes', async () => {
    server = await serve(base)
    const idle = session(server.url)
    expect((await h2get(idle, '/')).status).toBe(200)
    const idleGoaway = once(idle, 'goaway')
    const busy = session(server.url)
    const slow = h2get(busy, '/slow?ms=1000')
    await waitFor('the stream in flight', () => { const w = server!.status()[0]!; return w.requests === 2 && w.inflight === 1 })
    const started = Date.now()
    await server.close()
    const took = Date.now() - started
    server = undefined
    await idleGoaway
    const answer = await slow
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body)).toMatchObject({ slept: 1000 })
    expect(took).toBeLessThan(5000)
  })

  it('retire the replaced worker in a rolling restart once its sessions end, not at shutdownTimeout', async () => {
    server = await serve(base)
    const old = session(server.url)
    expect(JSON.parse((await h2get(old, '/')).body).worker.generation).toBe(1)
    const oldGoaway = once(old, 'goaway')
    const started = Date.now()
    await server.restart()
    expect(Date.now() - started).toBeLessThan(5000)
    await oldGoaway
    expect(JSON.parse((await h2get(session(server.url), '/')).body).worker.generation).toBe(2)
  })

  it('answer 408 to a stream whose request is not whole within requestTimeout, as Node does over HTTP/1.1; a slow handler is not cut', async () => {
    server = await serve({ ...base, app: fixture('http2-timeout-app.js') })
    const s = session(server.url)
    const started = Date.now()
    // A body that never ends.
    const stalled = s.request({ ':path': '/echo', ':method': 'POST', 'content-type': 'text/plain' })
    stalled.on('error', () => {})
    stalled.write('a few bytes')
    const [headers] = await once(stalled, 'response') as [Record<string, string | number>]
    expect(headers[':status']).toBe(408)
    expect(Date.now() - started).toBeLessThan(5000)
    await once(stalled, 'close')
    // The session serves on: a whole POST, and a handler slower than requestTimeout whose request was whole.
    const whole = await h2get(s, '/echo', 'hello')
    expect(whole).toEqual({ status: 200, body: JSON.stringify({ received: 5 }) })
    expect(await h2get(s, '/slow?ms=1500')).toEqual({ status: 200, body: JSON.stringify({ slept: 1500 }) })
    expect(server.status()[0]!.state).toBe('ready')
  })

  it('over TLS with allowHTTP1, bound the HTTP/1.1 connections too: a client that trickles its headers or its body gets 408 within about a second of the timeout', async () => {
    server = await serve({ ...base, app: fixture('http2-tls-app.js') })
    const port = Number(new URL(server.url).port)
    /** Writes `head` over TLS as HTTP/1.1, then one byte every 200 ms when `trickle`: the first line of the answer and how long it took. */
    const h1 = (head: string, trickle: boolean) => new Promise<{ line: string, ms: number }>((resolve) => {
      const started = Date.now()
      const socket = tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] })
      let answer = ''
      let timer: NodeJS.Timeout | undefined
      socket.setEncoding('latin1')
      socket.on('data', (chunk: string) => { answer += chunk })
      socket.on('error', () => {})
      socket.on('close', () => { clearInterval(timer); resolve({ line: answer.split('\r\n')[0]!, ms: Date.now() - started }) })
      socket.on('secureConnect', () => {
        socket.write(head)
        if (trickle) timer = setInterval(() => { if (!socket.destroyed) socket.write('a') }, 200)
      })
      // The test's own bound: a connection the server never cuts.
      setTimeout(() => { socket.destroy() }, 8000).unref()
    })
    expect(await h1('GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n', false)).toMatchObject({ line: 'HTTP/1.1 200 OK' })
    // requestTimeout 2000 ms, so headers within 2000 ms too; checked every second.
    const headers = await h1('GET / HTTP/1.1\r\nHost: a.test\r\nX-Slow: ', true)
    expect(headers.line).toBe('HTTP/1.1 408 Request Timeout')
    expect(headers.ms).toBeLessThan(4500)
    const body = await h1('POST /echo HTTP/1.1\r\nHost: a.test\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n', true)
    expect(body.line).toBe('HTTP/1.1 408 Request Timeout')
    expect(body.ms).toBeLessThan(4500)
    // HTTP/2 over the same port is served as before.
    const s = connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false })
    s.on('error', () => {})
    sessions.push(s)
    expect(await h2get(s, '/')).toEqual({ status: 200, body: JSON.stringify({ httpVersion: '2.0' }) })
    expect(server.status()[0]!.state).toBe('ready')
  })
})
