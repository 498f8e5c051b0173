// Pool thread side of a response: coalesces the framework's small chunks (React emits ~3 KB
// pieces) into one fresh ArrayBuffer per message and transfers it, at CHUNK_BYTES (the first
// message: at FIRST_BYTES) or at the next turn of the event loop, so a Suspense part still
// leaves at once. Posting each piece
// alone cost ~40 % of the throughput of a 45 KB page. The head waits for that same turn and
// travels with the first bytes, and the last bytes carry the end: each message wakes the
// main thread, which on a VM costs an interrupt, so a page rendered in one turn is one
// message instead of three. A body chunk is posted only against a credit from the main
// thread; without one the sender stops pulling from the framework.
import type { MessagePort } from 'node:worker_threads'
import { CHUNK_BYTES, WINDOW, type FromThread, type ResponseHead } from './protocol.ts'

/** Bytes the first message may gather within one turn of the loop (the whole window). */
const FIRST_BYTES = WINDOW * CHUNK_BYTES

export class ChunkSender {
  readonly #port: MessagePort
  #credit = WINDOW
  #head: ResponseHead | undefined
  #pending: Uint8Array[] = []
  #size = 0
  #scheduled = false
  #waiter: (() => void) | undefined
  #closed = false
  /** Whether any message left on the port. */
  #posted = false

  constructor (port: MessagePort) {
    this.#port = port
  }

  /** The main thread granted `n` more chunks. */
  credit (n: number): void {
    this.#credit += n
    if (this.#size > 0 && !this.#waiter) this.#post(false)
    const wake = this.#waiter
    this.#waiter = undefined
    wake?.()
  }

  /** Stops every wait and every post (the client is gone, or the render failed). */
  close (): void {
    this.#closed = true
    const wake = this.#waiter
    this.#waiter = undefined
    wake?.()
  }

  get closed (): boolean { return this.#closed }

  /** The response head: posted at the next turn of the loop, with whatever body bytes are ready by then. */
  head (head: ResponseHead): void {
    this.#head = head
    this.#schedule()
  }

  /** Adds a piece; resolves when the sender may take more (a full chunk waits for credit). */
  async add (piece: Uint8Array): Promise<void> {
    if (piece.byteLength === 0) return
    this.#pending.push(piece)
    this.#size += piece.byteLength
    // Until the first message leaves, up to a window's worth waits for the turn's end: a
    // page larger than a chunk that is whole within the turn (Next.js writes its 100 KB
    // page, then its last 14 bytes) is then one message, the task's result.
    if (this.#size >= (this.#posted ? CHUNK_BYTES : FIRST_BYTES)) await this.flush()
    else this.#schedule()
  }

  /** Posts what is pending, waiting for credit as needed; `end`: it is the response's last message. */
  async flush (end = false): Promise<void> {
    while (!this.#closed) {
      if (this.#size > 0 && this.#credit === 0) {
        await new Promise<void>((resolve) => { this.#waiter = resolve })
        continue
      }
      if (this.#size > 0 || this.#head) this.#post(end)
      else if (end) { this.#posted = true; this.#port.postMessage({ t: 'end' } satisfies FromThread) }
      return
    }
  }

  #schedule (): void {
    if (this.#scheduled) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      if (this.#closed || this.#waiter) return
      // Without credit for the bytes, the head still leaves alone.
      if (this.#credit > 0 ? this.#size > 0 || this.#head : this.#head) this.#post(false)
    })
  }

  /**
   * The whole response as one message (head, every body byte and the end), when nothing has
   * left on the port yet: the task returns it as its result, which piscina posts anyway, so
   * a page rendered in one turn of the loop costs the pool thread one message instead of
   * two. Undefined once something was posted (the rest must follow it on the port).
   */
  final (): { message: FromThread, transfer: ArrayBuffer[] } | undefined {
    if (this.#posted || this.#closed || !this.#head || this.#credit === 0) return undefined
    const b = this.#take()
    const message: FromThread = { t: 'head', head: this.#head, b, end: true }
    this.#head = undefined
    return { message, transfer: b ? [b] : [] }
  }

  /** The pending bytes in one buffer of our own, against a credit. */
  #take (): ArrayBuffer | undefined {
    if (this.#size === 0 || this.#credit === 0) return undefined
    // One copy into a buffer of our own: the framework's chunks may be views of a larger
    // buffer it reuses, and only a whole ArrayBuffer can be transferred.
    const out = new Uint8Array(this.#size)
    let at = 0
    for (const piece of this.#pending) { out.set(piece, at); at += piece.byteLength }
    this.#pending = []
    this.#size = 0
    this.#credit--
    return out.buffer
  }

  #post (end: boolean): void {
    const b = this.#take()
    const head = this.#head
    this.#head = undefined
    const last = end && this.#size === 0
    let message: FromThread
    if (head) message = { t: 'head', head, b, end: last }
    else if (b) message = { t: 'chunk', b, end: last }
    else return
    this.#posted = true
    this.#port.postMessage(message, b ? [b] : [])
  }
}
