// Finds a pool thread whose event loop has stopped turning (an endless loop in a render):
// each thread's loop adds 1 to its heartbeat every BEAT_INTERVAL ms, and this watch, in the
// main thread, reads the counters without the threads' help. A thread that no beat left for
// `timeout` ms is reported once; the pool ends it.
//
// Utilization cannot tell the two apart: a thread kept fully busy by a queue of renders has
// an event loop that never idles (utilization ~1 for as long as the load lasts), yet it turns
// between renders, and its timers, the heartbeat among them, still fire.
import type { ThreadReady } from './protocol.ts'
import { BEAT_INTERVAL } from './protocol.ts'

interface Beat {
  readonly counter: Int32Array
  /** The counter when it last changed, and when (Date.now()) that was seen. */
  last: number
  since: number
}

export class HangWatch {
  readonly #timeout: number
  readonly #beats = new Map<number, Beat>()
  #timer: NodeJS.Timeout | undefined

  /** `timeout`: ms without a beat after which a thread counts as stuck. */
  constructor (timeout: number) {
    this.#timeout = timeout
  }

  /** Watches the thread that sent `ready` from now on. */
  track (ready: ThreadReady): void {
    this.#beats.set(ready.threadId, { counter: ready.beat, last: Atomics.load(ready.beat, 0), since: Date.now() })
  }

  /**
   * Checks the counters every quarter timeout (at least every BEAT_INTERVAL, at most every
   * second) and calls `onHang` with the id of a thread whose loop stopped. A thread that
   * ended also stops beating: `onHang` gets its id too and must ignore a thread it no
   * longer has.
   */
  start (onHang: (threadId: number) => void): void {
    const interval = Math.max(BEAT_INTERVAL, Math.min(1000, this.#timeout / 4))
    this.#timer = setInterval(() => {
      const now = Date.now()
      for (const [threadId, beat] of this.#beats) {
        const count = Atomics.load(beat.counter, 0)
        if (count !== beat.last) {
          beat.last = count
          beat.since = now
        } else if (now - beat.since >= this.#timeout) {
          this.#beats.delete(threadId)
          onHang(threadId)
        }
      }
    }, interval)
    this.#timer.unref()
  }

  /**
   * ms since the thread's loop last turned (its beat changed), read now; 0 for a thread not
   * watched (not ready yet, or already reported).
   */
  quietFor (threadId: number, now: number): number {
    const beat = this.#beats.get(threadId)
    if (!beat) return 0
    const count = Atomics.load(beat.counter, 0)
    if (count !== beat.last) {
      beat.last = count
      beat.since = now
    }
    return now - beat.since
  }

  stop (): void {
    clearInterval(this.#timer)
  }
}
