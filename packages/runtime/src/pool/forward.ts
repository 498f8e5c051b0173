// Main thread side of one request sent to a pool thread: its MessageChannel, the request
// body pumped out against the thread's credits, and the response streamed into Fastify's
// reply as a Readable, so hooks (onSend, compression, the HTTP cache) see a normal reply.
import { validateHeaderValue } from 'node:http'
import { Readable } from 'node:stream'
import { MessageChannel, type MessagePort } from 'node:worker_threads'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Piscina } from 'piscina'
import { SPINDLE_RUNTIME_POOL_BAD_RESPONSE, SPINDLE_RUNTIME_POOL_THREAD_FAILED } from '../errors.ts'
import { deserializeError } from '../protocol.ts'
import { CHUNK_BYTES, WINDOW, type FromThread, type PoolTask, type RequestHead, type ResponseHead, type TaskResult, type ToThread } from './protocol.ts'
import { buffersFreedWhenWritten } from './release.ts'
import { reportPoolEvent } from './pool-report.ts'
import { discardUnreadBody } from '../unread-body.ts'
import { droppedOnHttp2 } from '../connection-headers.ts'
import { BodyLength, declaredLength } from '../body-length.ts'
import { flushEventStreamHead } from '../event-stream-head.ts'

/** How a forwarded request ended, for the pool's accounting and logs. */
export type ForwardOutcome = 'ok' | 'aborted' | 'crashed'

/**
 * Credits go back two at a time (half the window), as the client's socket takes the chunks:
 * each message wakes the pool thread, and it never runs dry with two or more in hand.
 */
const CREDIT_BATCH = WINDOW / 2

/**
 * The response body as it arrives; credits go back as the client's socket takes the chunks.
 * A body longer or shorter than the app's own Content-Length throws (the caller answers 502,
 * or cuts the connection once Fastify has the body): Node would write it as it is, and a
 * keep-alive client or a proxy would read the surplus as the next response, or the next
 * response as the rest of this one (an app that copies an upstream's Content-Length onto
 * the body that fetch() decompressed).
 */
class ThreadResponse extends Readable {
  readonly #port: MessagePort
  /** Where the chunks' buffers are collected to be freed once written (release.ts), if they may be. */
  readonly #owned: ArrayBuffer[] | undefined
  /** The app's own Content-Length, counted (body-length.ts). */
  readonly #length: BodyLength
  #owed = 0

  constructor (port: MessagePort, owned: ArrayBuffer[] | undefined, declared: number | undefined) {
    super({ highWaterMark: CHUNK_BYTES })
    this.#port = port
    this.#owned = owned
    this.#length = new BodyLength(declared)
  }

  override _read (): void {
    if (this.#owed >= CREDIT_BATCH) this.#grant()
  }

  /** A chunk arrived; `last`: the thread sends no more, so no credit is owed for it. */
  add (b: ArrayBuffer, last: boolean): void {
    this.#length.add(b.byteLength)
    if (last) this.#length.end()
    this.#owned?.push(b)
    const room = this.push(Buffer.from(b))
    if (last) { this.push(null); return }
    this.#owed++
    if (room && this.#owed >= CREDIT_BATCH) this.#grant()
  }

  /** The thread sends no more. */
  end (): void {
    this.#length.end()
    this.push(null)
  }

  #grant (): void {
    const message: ToThread = { t: 'credit', n: this.#owed }
    this.#owed = 0
    this.#port.postMessage(message)
  }
}

/**
 * Status, reason phrase and headers of the thread's response on `reply`. A header that
 * comes more than once (two Vary or WWW-Authenticate lines, not only Set-Cookie) keeps
 * every value: `reply.header()` replaces what it was given before for any other name.
 */
function applyHead (reply: FastifyReply, head: ResponseHead): void {
  // Throws for a status outside 100-599 (Node lets an app write up to 999): the caller answers 502.
  reply.status(head.status)
  if (head.statusText !== undefined) reply.raw.statusMessage = head.statusText
  const values = new Map<string, string | string[]>()
  for (const [name, value] of head.headers) {
    // No trailer crosses the port, so none is announced (and Node refuses a Trailer header
    // on a response with a Content-Length, which a whole page is sent with).
    if (name === 'trailer' || droppedOnHttp2(reply.request.raw.httpVersionMajor, name)) continue
    // A Web Response takes control characters in a value that Node refuses to write. Node
    // checks only as it writes the head, which an onSend hook puts off past this call (the
    // client would get Fastify's 500 with the app's other headers): checked here instead.
    validateHeaderValue(name, value)
    const seen = values.get(name)
    if (seen === undefined) values.set(name, value)
    else if (typeof seen === 'string') values.set(name, [seen, value])
    else seen.push(value)
  }
  for (const [name, value] of values) reply.header(name, value)
  flushEventStreamHead(reply, values.get('content-type'))
}

/**
 * Sends the request to a pool thread and streams the answer into `reply`. Resolves once the
 * reply is handed to Fastify (or the client is gone); `settled` resolves with the outcome
 * when the thread finished the task (its last byte, its abort, or its crash).
 */
export function forward (pool: Piscina, request: FastifyRequest, reply: FastifyReply, head: RequestHead, onCrash: (err: Error, headSent: boolean) => void): { replied: Promise<void>, settled: Promise<ForwardOutcome> } {
  // A client that left while the request waited (for a slot, or in the app's hooks) was
  // closed before the 'close' listener below could see it: the thread would never be told,
  // and a streamed response would wait for its credits for ever, holding the slot.
  if (reply.raw.destroyed) return { replied: Promise.resolve(), settled: Promise.resolve('aborted') }
  const { port1: port, port2 } = new MessageChannel()
  const task: PoolTask = { head, port: port2 }
  let response: ThreadResponse | undefined
  let ended = false
  let gone = false
  let resolveReplied!: () => void
  const replied = new Promise<void>((resolve) => { resolveReplied = resolve })
  const raw = request.raw

  let credit = WINDOW
  const onData = (chunk: Buffer) => {
    // One copy out of the socket's buffer (a slice of a larger one) into a buffer that can move.
    const b = chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer
    port.postMessage({ t: 'body', b } satisfies ToThread, [b])
    if (--credit <= 0) raw.pause()
  }
  const onEnd = () => { port.postMessage({ t: 'bodyEnd' } satisfies ToThread) }
  if (head.hasBody) {
    raw.on('data', onData)
    raw.once('end', onEnd)
    // A thread that answered without reading the whole body took no more of it: the rest
    // would hold up the connection's next request.
    discardUnreadBody(raw, reply.raw)
  }

  const finish = () => {
    ended = true
    raw.off('data', onData)
    raw.off('end', onEnd)
    port.close()
  }

  /**
   * The app's response could not be sent (a status Fastify refuses, a header Node refuses, a
   * body that does not match its Content-Length): the render is stopped and the client gets
   * a 502, or a cut connection once the body was handed to Fastify.
   */
  const refuseHead = (err: Error): void => {
    // Once Fastify has the body (`response`), no other answer can follow, though its head may not have left.
    const cut = reply.raw.headersSent || response !== undefined
    reportPoolEvent(request.log, 'error', cut ? "the app's response could not be sent: connection cut" : "the app's response head cannot be sent: answered 502", { err })
    if (!ended) port.postMessage({ t: 'abort' } satisfies ToThread)
    finish()
    response?.destroy(err)
    if (cut) reply.raw.destroy()
    else if (!reply.sent) {
      // None of the app's head goes out with the 502 (a Set-Cookie of a failed answer least of
      // all), nor its reason phrase: the app's own, or the one Node set for the app's status
      // before it refused a header ('502 OK'). Empty, Node writes the standard one.
      for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name)
      reply.raw.statusMessage = ''
      reply.code(502).send(new SPINDLE_RUNTIME_POOL_BAD_RESPONSE())
    }
    resolveReplied()
  }

  const onMessage = (message: FromThread): void => {
    try {
      handle(message)
    } catch (err) {
      refuseHead(err as Error)
    }
  }

  const handle = (message: FromThread): void => {
    switch (message.t) {
      case 'head': {
        applyHead(reply, message.head)
        if (message.end && !message.b) {
          // No body: sent as Fastify's thread sends a Response without one. Handed an empty
          // stream, Fastify would drop a 204's Content-Type and send a 200 chunked.
          finish()
          reply.send()
          resolveReplied()
          break
        }
        const owned = buffersFreedWhenWritten(request, reply)
        // Whole already: one buffer. Fastify would give a Buffer without a Content-Type
        // application/octet-stream, so a head without one takes the stream path (no type,
        // as the app sent it).
        if (message.end && message.b && !reply.hasHeader('transfer-encoding') && reply.hasHeader('content-type')) {
          // A page rendered in one turn: sent with a Content-Length and no stream to pipe.
          finish()
          owned?.push(message.b)
          reply.send(Buffer.from(message.b))
          resolveReplied()
          break
        }
        const body = new ThreadResponse(port, owned, declaredLength(reply.request.method, reply.statusCode, reply.getHeader('content-length')))
        if (message.b) body.add(message.b, message.end === true)
        if (message.end) finish()
        reply.send(body)
        response = body
        resolveReplied()
        break
      }
      case 'chunk':
        response?.add(message.b, message.end === true)
        if (message.end) finish()
        break
      case 'end': finish(); response?.end(); break
      case 'credit':
        credit += message.n
        if (credit > 0 && raw.isPaused() && !gone) raw.resume()
        break
      case 'error': {
        const err = deserializeError(message.error)
        finish()
        if (response) response.destroy(err)
        else { reply.send(err); resolveReplied() }
        break
      }
    }
  }
  port.on('message', onMessage)

  reply.raw.once('close', () => {
    // The thread sent its last bytes: nothing to stop. A response that finished without them
    // was replaced (an onSend hook answered something else) or cut: the render is stopped
    // too, or it would wait for credits for ever and hold its slot.
    if (ended) return
    gone = true
    port.postMessage({ t: 'abort' } satisfies ToThread)
    finish()
    response?.destroy()
    resolveReplied()
  })

  const settled = (pool.run(task, { transferList: [port2] as never }) as Promise<TaskResult>).then(
    (result): ForwardOutcome => {
      // A response that was whole before anything left on the port comes as the result.
      if (result !== undefined && !ended && !gone) onMessage(result)
      return gone ? 'aborted' : 'ok'
    },
    (err: Error): ForwardOutcome => {
      if (!ended && !gone) {
        onCrash(err, response !== undefined)
        finish()
        if (response) response.destroy(err)
        // The client learns only that the thread failed; what failed is in the log (onCrash).
        else { reply.send(new SPINDLE_RUNTIME_POOL_THREAD_FAILED()); resolveReplied() }
      }
      return 'crashed'
    })
  return { replied, settled }
}
