// The contract between the main thread (which owns the sockets) and a render pool thread:
// what a task carries, the messages both sides post on the request's own MessagePort, and
// the flow-control constants. Bodies travel as transferred ArrayBuffers, never cloned.
//
// Flow control is by credit: a side may post one body chunk per credit it holds, and the
// receiver grants credits as its consumer takes chunks (the response side: as the client's
// socket drains, two at a time and none for the last chunk; the request side: as the
// framework reads the body). Neither side holds more than WINDOW chunks of CHUNK_BYTES for
// one request.
import type { MessagePort } from 'node:worker_threads'
import type { SerializedError } from '../protocol.ts'

/** Chunks one side may post before the other grants more credit. */
export const WINDOW = 4
/** Largest body chunk: the response coalescer posts at this size or at the next turn of the loop. */
export const CHUNK_BYTES = 64 * 1024

/** What the main thread knows of a request: enough to rebuild it in the pool thread. */
export interface RequestHead {
  readonly method: string
  /** Absolute URL, origin from Fastify's protocol and host (which honour trustProxy). */
  readonly url: string
  /** Name, value, name, value... as received (the Node rawHeaders shape). */
  readonly rawHeaders: string[]
  readonly remoteAddress: string
  /** Whether the client connection is TLS (before any proxy header). */
  readonly encrypted: boolean
  readonly httpVersion: string
  /** Whether body chunks follow on the port (false for GET and HEAD). */
  readonly hasBody: boolean
}

/** One piscina task = one whole request; it resolves after the last byte of the response. */
export interface PoolTask {
  readonly head: RequestHead
  /** The thread's end of the request's MessageChannel (in the task's transferList). */
  readonly port: MessagePort
}

/** Response head: status and header pairs (each value of a repeated header its own pair). */
export interface ResponseHead {
  readonly status: number
  /** The reason phrase, only when it is not the standard one for `status`. */
  readonly statusText?: string
  readonly headers: Array<[string, string]>
}

/** Main thread → pool thread. */
export type ToThread =
  | { readonly t: 'body', readonly b: ArrayBuffer }
  | { readonly t: 'bodyEnd' }
  /** The client went away: abort the render. */
  | { readonly t: 'abort' }
  /** The client's socket took `n` more response chunks. */
  | { readonly t: 'credit', readonly n: number }

/**
 * Pool thread → main thread. The head travels with the first body bytes ready in its turn
 * of the loop, and the last bytes with the end (`end: true`), so a response rendered in one
 * turn is one message; 'end' alone closes a body whose last bytes already left.
 */
export type FromThread =
  | { readonly t: 'head', readonly head: ResponseHead, readonly b?: ArrayBuffer | undefined, readonly end?: boolean }
  | { readonly t: 'chunk', readonly b: ArrayBuffer, readonly end?: boolean }
  | { readonly t: 'end' }
  /** The render failed: before the head the main thread answers with the error, after it the response is cut. */
  | { readonly t: 'error', readonly error: SerializedError }
  /** The framework read `n` more request body chunks. */
  | { readonly t: 'credit', readonly n: number }

/**
 * What a task resolves with: the whole response as one 'head' message with `end: true`
 * when it was ready before anything left on the port (a page rendered in one turn of the
 * loop), else nothing. It arrives after every message of the port, since none was sent.
 */
export type TaskResult = FromThread | undefined

/** ms between a pool thread's heartbeats: a timer, so it fires only while the thread's event loop turns. */
export const BEAT_INTERVAL = 50

/** Posted once on the thread's parentPort when the framework handler is loaded (piscina relays it as the pool's 'message'). */
export interface ThreadReady {
  readonly spindlePool: 'ready'
  readonly threadId: number
  /** One counter on a SharedArrayBuffer that the thread adds 1 to every BEAT_INTERVAL ms; the main thread only reads it. */
  readonly beat: Int32Array
}

/** workerData of a pool thread. `shared` has the same shape as a runtime worker's, so getSharedStore() works there too. */
export interface PoolThreadData {
  readonly kind: 'spindle-pool-thread'
  readonly shared: Record<string, unknown>
  /** What the framework's thread entry needs (e.g. the build path); cloneable. */
  readonly options: Record<string, unknown>
}

export function isThreadReady (value: unknown): value is ThreadReady {
  return typeof value === 'object' && value !== null && (value as ThreadReady).spindlePool === 'ready'
}
