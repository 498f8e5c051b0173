// Pool thread side of a response body: coalesces the framework's small chunks (React emits
// ~3 KB pieces) into one fresh ArrayBuffer per message and transfers it, at CHUNK_BYTES or
// at the next turn of the event loop, so a Suspense part still leaves at once. Posting each
// piece alone cost ~40 % of the throughput of a 45 KB page. A chunk is posted only against a
// credit from the main thread; without one the sender stops pulling from the framework.
import type { MessagePort } from 'node:worker_threads'
import { CHUNK_BYTES, WINDOW, type FromThread } from './protocol.ts'

export class ChunkSender {
  readonly #port: MessagePort
  #credit = WINDOW
  #pending: Uint8Array[] = []
  #size = 0
  #scheduled = false
  #waiter: (() => void) | undefined
  #closed = false

  constructor (port: MessagePort) {
    this.#port = port
  }

  /** The main thread granted `n` more chunks. */
  credit (n: number): void {
    this.#credit += n
    if (this.#size > 0 && !this.#waiter) this.#post()
    const wake = this.#waiter
    this.#waiter = undefined
    wake?.()
  }

  /** Stops every wait (the client is gone). */
  close (): void {
    this.#closed = true
    const wake = this.#waiter
    this.#waiter = undefined
    wake?.()
  }

  get closed (): boolean { return this.#closed }

  /** Adds a piece; resolves when the sender may take more (a full chunk waits for credit). */
  async add (piece: Uint8Array): Promise<void> {
    if (piece.byteLength === 0) return
    this.#pending.push(piece)
    this.#size += piece.byteLength
    if (this.#size >= CHUNK_BYTES) await this.flush()
    else if (!this.#scheduled) {
      this.#scheduled = true
      setImmediate(() => {
        this.#scheduled = false
        if (this.#size > 0 && this.#credit > 0 && !this.#waiter) this.#post()
      })
    }
  }

  /** Posts what is pending, waiting for credit as needed. */
  async flush (): Promise<void> {
    while (this.#size > 0 && !this.#closed) {
      if (this.#credit === 0) await new Promise<void>((resolve) => { this.#waiter = resolve })
      else this.#post()
    }
  }

  #post (): void {
    // One copy into a buffer of our own: the framework's chunks may be views of a larger
    // buffer it reuses, and only a whole ArrayBuffer can be transferred.
    const out = new Uint8Array(this.#size)
    let at = 0
    for (const piece of this.#pending) { out.set(piece, at); at += piece.byteLength }
    this.#pending = []
    this.#size = 0
    this.#credit--
    const message: FromThread = { t: 'chunk', b: out.buffer }
    this.#port.postMessage(message, [out.buffer])
  }
}
