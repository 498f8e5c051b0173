import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'node:http'
import { connect } from 'node:net'
import { serve, type SpindleServer } from '@spindle/runtime'
import { fixture, get } from './helpers.ts'

const base = { workers: 1, port: 0, controlPort: false, handleSignals: false, host: '127.0.0.1', shedding: false } as const

let server: SpindleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** POSTs `size` bytes as application/octet-stream, chunked (no Content-Length) or not. */
function upload (url: string, size: number, chunked: boolean, method = 'POST'): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { 'content-type': 'application/octet-stream', ...(chunked ? {} : { 'content-length': size }) } }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => { body += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', (err: NodeJS.ErrnoException) => {
      // The server may answer 413 and close before the whole body went out.
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') resolve({ status: -1, body: err.code })
      else reject(err)
    })
    const chunk = Buffer.alloc(64 * 1024, 120)
    let sent = 0
    const write = (): void => {
      while (sent < size) {
        const part = chunk.subarray(0, Math.min(chunk.length, size - sent))
        sent += part.length
        if (!req.write(part)) { req.once('drain', write); return }
      }
      req.end()
    }
    write()
  })
}

describe('the public port of every worker', () => {
  it('bounds the time to receive a request and its headers by default', async () => {
    server = await serve({ ...base, app: fixture('raw-parser.js') })
    expect((await get(server.url + '/limits')).json()).toEqual({ requestTimeout: 30_000, headersTimeout: 10_000, bodyLimit: 1_048_576 })
  })

  it('keeps the app\'s own limits', async () => {
    server = await serve({ ...base, app: fixture('raw-parser-options.js') })
    expect((await get(server.url + '/limits')).json()).toEqual({ requestTimeout: 5000, headersTimeout: 5000, bodyLimit: 4096 })
  })

  it('cuts off a client trickling its headers within a second of the headers timeout, not at Node\'s 30 s connections check', async () => {
    server = await serve({ ...base, app: fixture('short-timeouts.js') })
    expect((await get(server.url + '/limits')).json()).toMatchObject({ headersTimeout: 2000 })
    const { port } = new URL(server.url)
    const socket = connect(Number(port), '127.0.0.1')
    const started = Date.now()
    let answer = ''
    socket.on('data', (c: Buffer) => { answer += c })
    socket.on('error', () => {})
    // One header byte every 200 ms, for at most 6 s.
    socket.write('GET /limits HTTP/1.1\r\nHost: x\r\nX-Slow: ')
    const trickle = setInterval(() => { socket.write('a') }, 200)
    const closed = await new Promise<boolean>((resolve) => {
      const giveUp = setTimeout(() => resolve(false), 6000)
      socket.on('close', () => { clearTimeout(giveUp); resolve(true) })
    })
    clearInterval(trickle)
    socket.destroy()
    expect(closed).toBe(true)
    expect(answer).toMatch(/^HTTP\/1\.1 408/)
    // The timeout, then at most a check interval (1 s) and some slack for a busy machine.
    expect(Date.now() - started).toBeLessThan(4500)
  })

  it('holds a catch-all parser to bodyLimit, with or without Content-Length, and serves on', async () => {
    server = await serve({ ...base, app: fixture('raw-parser-options.js') })
    const url = server.url + '/upload'
    expect(await upload(url, 1024, false)).toEqual({ status: 200, body: '{"bytes":1024}' })
    const declared = await upload(url, 8 * 1024 * 1024, false)
    expect([413, -1]).toContain(declared.status)
    const chunked = await upload(url, 8 * 1024 * 1024, true)
    expect([413, -1]).toContain(chunked.status)
    // At least one of them got the 413 itself rather than a cut connection.
    expect([declared.status, chunked.status]).toContain(413)
    expect(await upload(url, 2048, true)).toEqual({ status: 200, body: '{"bytes":2048}' })
    expect(server.status()[0]!.restarts).toBe(0)
  })

  it('guards every route that takes a body, in nested plugins and on routes with several methods', async () => {
    server = await serve({ ...base, app: fixture('raw-parser-options.js') })
    const url = server.url + '/nested'
    expect((await get(url)).json()).toEqual({ bytes: 0 })
    expect(await upload(url, 1024, true, 'PUT')).toEqual({ status: 200, body: '{"bytes":1024}' })
    const chunked = await upload(url, 8 * 1024 * 1024, true, 'PUT')
    const declared = await upload(url, 8 * 1024 * 1024, false, 'PUT')
    expect([413, -1]).toContain(chunked.status)
    expect([413, -1]).toContain(declared.status)
    expect([chunked.status, declared.status]).toContain(413)
  })
})
