import { afterEach, describe, expect, it } from 'vitest'
import { connect } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { discardUnreadBody, DISCARD_LIMIT } from '../src/unread-body.ts'
import { postThenGet } from './raw-http.ts'

let app: FastifyInstance | undefined
afterEach(async () => { await app?.close(); app = undefined })

/**
 * A server whose POST /answer reads the first chunk of the body, as a framework's body stream
 * does before the app stops reading, and answers without the rest; GET /next answers 'next'.
 */
async function serve (): Promise<number> {
  // A connection left stuck must not hold up close().
  app = Fastify({ forceCloseConnections: true })
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
  app.post('/answer', async (request, reply) => {
    const raw = request.raw
    await new Promise<void>((resolve) => { raw.once('data', () => { raw.pause(); resolve() }) })
    discardUnreadBody(raw, reply.raw)
    return 'answered'
  })
  app.get('/next', async () => 'next')
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as { port: number }).port
}

describe('a request body the app did not read, once its response has gone', () => {
  it('is dropped, so the next request on the connection is answered', async () => {
    const port = await serve()
    expect(await postThenGet(port, '/answer', 1024 * 1024, '/next')).toEqual({ statuses: ['200', '200'], closed: true })
  })

  it('is dropped up to a bound: past it the connection is closed, its answer read first', async () => {
    const port = await serve()
    const answer = await postThenGet(port, '/answer', 5 * DISCARD_LIMIT, '/next')
    expect(answer).toEqual({ statuses: ['200'], closed: true })
  })

  it('is not read for ever: a client that goes on sending after the end has its connection ended', async () => {
    const port = await serve()
    // Half-open: this client does not close its side when the server closes its own, and
    // sends a chunked body that never ends for as long as the connection lasts.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true })
    let text = ''
    let ended = false
    socket.on('data', (c: Buffer) => { text += c.toString('latin1') })
    socket.on('end', () => { ended = true })
    socket.on('error', () => {})
    socket.write('POST /answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n')
    const piece = `${(64 * 1024).toString(16)}\r\n${'a'.repeat(64 * 1024)}\r\n`
    const more = () => {
      while (!socket.destroyed && socket.writable) if (!socket.write(piece)) { socket.once('drain', more); return }
    }
    more()
    const closed = await new Promise<boolean>((resolve) => {
      const giveUp = setTimeout(() => resolve(false), 6000)
      socket.on('close', () => { clearTimeout(giveUp); resolve(true) })
    })
    socket.destroy()
    expect(text).toMatch(/^HTTP\/1\.1 200/)
    expect(ended).toBe(true)
    expect(closed).toBe(true)
  })
})
