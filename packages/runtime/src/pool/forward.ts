// Main thread side of one request sent to a pool thread: its MessageChannel, the request
// body pumped out against the thread's credits, and the response streamed into Fastify's
// reply as a Readable, so hooks (onSend, compression, the HTTP cache) see a normal reply.
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

/** How a forwarded request ended, for the pool's accounting and logs. */
export type ForwardOutcome = 'ok' | 'aborted' | 'crashed'

/**
 * Credits go back two at a time (half the window), as the client's socket takes the chunks:
 * each message wakes the pool thread, and it never runs dry with two or more in hand.
 */
const CREDIT_BATCH = WINDOW / 2

/** The response body as it arrives; credits go back as the client's socket takes the chunks. */
class ThreadResponse extends Readable {
  readonly #port: MessagePort
  /** Where the chunks' buffers are collected to be freed once written (release.ts), if they may be. */
  readonly #owned: ArrayBuffer[] | undefined
  #owed = 0

  constructor (port: MessagePort, owned: ArrayBuffer[] | undefined) {
    super({ highWaterMark: CHUNK_BYTES })
    this.#port = port
    this.#owned = owned
  }

  override _read (): void {
    if (this.#owed >= CREDIT_BATCH) this.#grant()
  }

  /** A chunk arrived; `last`: the thread sends no more, so no credit is owed for it. */
  add (b: ArrayBuffer, last: boolean): void {
    this.#owned?.push(b)
    const room = this.push(Buffer.from(b))
    if (last) { this.push(null); return }
    this.#owed++
    if (room && this.#owed >= CREDIT_BATCH) this.#grant()
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
    const seen = values.get(name)
    if (seen === undefined) values.set(name, value)
    else if (typeof seen === 'string') values.set(name, [seen, value])
    else seen.push(value)
  }
  for (const [name, value] of values) reply.header(name, value)
  // An event stream's head leaves at once (an EventSource opens on it), not with its first event.
  if (/^text\/event-stream\b/i.test(String(values.get('content-type') ?? ''))) reply.raw.once('pipe', () => { reply.raw.flushHeaders() })
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
   * The app's head could not be sent (a status Fastify refuses, a header Node refuses): the
   * render is stopped and the client gets a 502, or a cut connection if bytes left already.
   */
  const refuseHead = (err: Error): void => {
    reportPoolEvent(request.log, 'error', reply.raw.headersSent ? "the app's response could not be sent: connection cut" : "the app's response head cannot be sent: answered 502", { err })
    if (!ended) port.postMessage({ t: 'abort' } satisfies ToThread)
    finish()
    response?.destroy(err)
    if (reply.raw.headersSent) reply.raw.destroy()
    else if (!reply.sent) {
      // None of the app's head goes out with the 502 (a Set-Cookie of a failed answer least of all).
      for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name)
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
        response = new ThreadResponse(port, owned)
        if (message.b) response.add(message.b, message.end === true)
        else if (message.end) response.push(null)
        if (message.end) finish()
        reply.send(response)
        resolveReplied()
        break
      }
      case 'chunk':
        response?.add(message.b, message.end === true)
        if (message.end) finish()
        break
      case 'end': response?.push(null); finish(); break
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
