// Pool thread side of one request: wires the request's MessagePort to a body stream, an
// abort signal and a response sender. Framework entries (Web Request/Response or Node
// req/res) build on it.
import type { MessagePort } from 'node:worker_threads'
import { serializeError } from '../protocol.ts'
import { BodyStream } from './body-stream.ts'
import { ChunkSender } from './chunk-sender.ts'
import { move, transferableSymbol, valueSymbol } from 'piscina'
import type { FromThread, PoolTask, RequestHead, ResponseHead, TaskResult, ToThread } from './protocol.ts'

export class TaskChannel {
  readonly head: RequestHead
  /** The request body, or undefined for GET and HEAD. */
  readonly body: ReadableStream<Uint8Array> | undefined
  /** Aborted when the client disconnects before the response ended. */
  readonly signal: AbortSignal
  readonly #port: MessagePort
  readonly #sender: ChunkSender
  readonly #bodyStream: BodyStream | undefined
  readonly #abort = new AbortController()
  #headSent = false
  #finished = false

  constructor (task: PoolTask) {
    this.head = task.head
    this.#port = task.port
    this.#sender = new ChunkSender(task.port)
    this.#bodyStream = task.head.hasBody ? new BodyStream(task.port) : undefined
    this.body = this.#bodyStream?.stream
    this.signal = this.#abort.signal
    task.port.on('message', (message: ToThread) => {
      switch (message.t) {
        case 'body': this.#bodyStream?.push(message.b); break
        case 'bodyEnd': this.#bodyStream?.end(); break
        case 'credit': this.#sender.credit(message.n); break
        case 'abort': this.#aborted(); break
      }
    })
  }

  get headSent (): boolean { return this.#headSent }
  get finished (): boolean { return this.#finished }

  /** The head leaves at the next turn of the loop, with the body bytes written by then. */
  sendHead (head: ResponseHead): void {
    if (this.#headSent || this.#finished) return
    this.#headSent = true
    this.#sender.head(head)
  }

  /** Adds body bytes; resolves when more may be written (back-pressure from the client). */
  write (piece: Uint8Array): Promise<void> {
    return this.#sender.add(piece)
  }

  /**
   * Sends what is left and the end. Resolves with what the task must return: the whole
   * response, when nothing has left yet (piscina posts it as the task's result, one message
   * for the page), else undefined.
   */
  async end (): Promise<TaskResult> {
    if (this.#finished) return undefined
    const final = this.#sender.final()
    if (!final) await this.#sender.flush(true)
    this.#close()
    // piscina posts the value with the buffers in its transfer list; the main thread receives the message itself.
    return final ? move({ [transferableSymbol]: final.transfer, [valueSymbol]: final.message }) as unknown as TaskResult : undefined
  }

  /** Before the head left: the main thread answers with the error. After it: the response is cut. */
  fail (error: unknown): void {
    if (this.#finished) return
    // Closed first: a head still waiting for its turn must not follow the error.
    this.#sender.close()
    this.#port.postMessage({ t: 'error', error: serializeError(error) } satisfies FromThread)
    this.#close()
  }

  #aborted (): void {
    if (this.#finished) return
    this.#abort.abort(new Error('client disconnected'))
    this.#bodyStream?.fail(new Error('client disconnected'))
    this.#close()
  }

  #close (): void {
    this.#finished = true
    this.#sender.close()
    this.#port.close()
  }
}
