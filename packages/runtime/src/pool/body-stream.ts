// Pool thread side of a request body: a ReadableStream fed by the main thread's 'body'
// messages. A credit goes back each time the framework takes a chunk, so at most WINDOW
// chunks wait here: a 50 MB upload streams through without being held.
import type { MessagePort } from 'node:worker_threads'
import type { FromThread } from './protocol.ts'

const CREDIT: FromThread = { t: 'credit', n: 1 }

export class BodyStream {
  readonly stream: ReadableStream<Uint8Array>
  readonly #port: MessagePort
  #controller!: ReadableStreamDefaultController<Uint8Array>
  readonly #queue: Uint8Array[] = []
  #wanting = false
  #ended = false
  #done = false

  constructor (port: MessagePort) {
    this.#port = port
    // highWaterMark 0: pull() runs only while the framework awaits a read, so each chunk
    // handed over is one the framework really took.
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => { this.#controller = controller },
      pull: () => {
        const next = this.#queue.shift()
        if (next) this.#hand(next)
        else if (this.#ended) this.#close()
        else this.#wanting = true
      },
      cancel: () => { this.#done = true },
    }, { highWaterMark: 0 })
  }

  push (b: ArrayBuffer): void {
    if (this.#done) return
    const chunk = new Uint8Array(b)
    if (this.#wanting) { this.#wanting = false; this.#hand(chunk) } else this.#queue.push(chunk)
  }

  end (): void {
    this.#ended = true
    if (this.#wanting && this.#queue.length === 0) this.#close()
  }

  fail (reason: Error): void {
    if (this.#done) return
    this.#done = true
    this.#controller.error(reason)
  }

  #hand (chunk: Uint8Array): void {
    this.#controller.enqueue(chunk)
    if (!this.#ended) this.#port.postMessage(CREDIT)
  }

  #close (): void {
    if (this.#done) return
    this.#done = true
    this.#controller.close()
  }
}
