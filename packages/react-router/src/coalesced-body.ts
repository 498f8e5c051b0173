// A Web Response body as a Node stream whose chunks are the framework's pieces joined per turn
// of the event loop. React streams a page in pieces of a few KB, several in one turn; written
// one by one, each is a syscall and a TCP segment of its own (about 15 per 46 KB page of the
// React Router example, against one or two for react-router-serve), which both the server and
// the client pay for. Joined, what one turn produced leaves in one write, and a Suspense part
// that resolves later still leaves as soon as its turn ends. The render pool coalesces its
// messages the same way (@spindle/runtime's pool/chunk-sender.ts).
import { Readable } from 'node:stream'
import { BodyLength } from '@spindle/runtime/pool'

/** A joined chunk is pushed at this size even before the turn ends. */
export const COALESCE_BYTES = 64 * 1024

class CoalescedBody extends Readable {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  #pieces: Uint8Array[] = []
  #size = 0
  #pulling = false
  #scheduled = false
  /** Set when push() refused more: the pump stops until _read asks again. */
  #full = false
  /** The app's own Content-Length, counted (@spindle/runtime's body-length.ts). */
  readonly #length: BodyLength

  constructor (body: ReadableStream<Uint8Array>, declared: number | undefined) {
    super()
    this.#reader = body.getReader()
    this.#length = new BodyLength(declared)
  }

  override _read (): void {
    this.#full = false
    if (!this.#pulling) void this.#pump()
  }

  override _destroy (err: Error | null, callback: (err?: Error | null) => void): void {
    this.#reader.cancel(err ?? undefined).catch(() => {})
    callback(err)
  }

  async #pump (): Promise<void> {
    this.#pulling = true
    try {
      while (!this.#full && !this.destroyed) {
        const { done, value } = await this.#reader.read()
        if (this.destroyed) return
        if (done) {
          this.#flush()
          this.#length.end()
          if (!this.destroyed) this.push(null)
          return
        }
        if (value.byteLength === 0) continue
        this.#pieces.push(value)
        this.#size += value.byteLength
        if (this.#size >= COALESCE_BYTES) this.#flush()
        else this.#schedule()
      }
    } catch (err) {
      this.destroy(err as Error)
    } finally {
      this.#pulling = false
    }
  }

  #schedule (): void {
    if (this.#scheduled) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      if (!this.destroyed) this.#flush()
    })
  }

  #flush (): void {
    if (this.#size === 0) return
    const pieces = this.#pieces
    const chunk = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, this.#size)
    this.#pieces = []
    this.#size = 0
    try {
      this.#length.add(chunk.byteLength)
    } catch (err) {
      // Not a byte past the declared length: Fastify cuts the connection on the error.
      this.destroy(err as Error)
      return
    }
    if (!this.push(chunk)) this.#full = true
  }
}

/**
 * The body as a Node stream of chunks joined per turn of the loop (see the file's head).
 * `declared`: the app's Content-Length, where Node writes a body after the head. A body
 * longer or shorter fails the stream, and Fastify cuts the connection: Node would write it
 * as it is, and a keep-alive client or a proxy would read the surplus as the next response,
 * or the next response as the rest of this one (a loader that copies an upstream's
 * Content-Length onto the body fetch() decompressed).
 */
export function coalescedBody (body: ReadableStream<Uint8Array>, declared?: number): Readable {
  return new CoalescedBody(body, declared)
}
