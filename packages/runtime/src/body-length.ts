// The body an app announced with its own Content-Length, counted as it goes out. After such a
// head Node writes whatever body it is given: a keep-alive client or a proxy reads the bytes
// past the length as the start of the next response, or, when the body falls short, the next
// response as the rest of this one. It happens when a handler copies an upstream's
// Content-Length onto the body that fetch() decompressed. The render pool (pool/forward.ts)
// and @spindle/react-router's bodies in Fastify's thread count with it, and fail the body at
// the first chunk past the length or at an end short of it.
import { SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH } from './errors.ts'

/**
 * The app's Content-Length (`value`: the header as the app set it) where Node writes a body
 * after the head, else undefined: not for HEAD, 1xx, 204 or 304, nor for a value that is
 * not a whole number of bytes.
 */
export function declaredLength (method: string | undefined, status: number, value: unknown): number | undefined {
  if (method === 'HEAD' || status < 200 || status === 204 || status === 304) return undefined
  if (typeof value !== 'string' && typeof value !== 'number') return undefined
  const length = Number(value)
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined
}

/** Counts a body against its declared length (declaredLength); undefined counts nothing. */
export class BodyLength {
  /** Bytes still to come; undefined where no length binds the body. */
  #left: number | undefined

  constructor (declared: number | undefined) {
    this.#left = declared
  }

  /** `bytes` more of the body: throws SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH if they pass the declared length. */
  add (bytes: number): void {
    if (this.#left === undefined) return
    this.#left -= bytes
    if (this.#left < 0) throw new SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH('longer', -this.#left)
  }

  /** The body ended: throws SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH if it fell short of the declared length. */
  end (): void {
    if (this.#left !== undefined && this.#left > 0) throw new SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH('shorter', this.#left)
  }
}
