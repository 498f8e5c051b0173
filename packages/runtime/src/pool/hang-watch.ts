// Finds a pool thread whose event loop has been fully busy for too long (an endless loop in
// a render): its utilization, read from the main thread, stays at ~1 while a healthy busy
// thread still idles between renders. Such a thread is reported once; the pool ends it.
import type { Worker } from 'node:worker_threads'
import type { EventLoopUtilization } from 'node:perf_hooks'

/** Utilization over one check interval at or above which a thread counts as stuck. */
const STUCK_ELU = 0.99

export class HangWatch {
  readonly #timer: NodeJS.Timeout
  readonly #last = new Map<Worker, { elu: EventLoopUtilization, since: number | undefined }>()

  constructor (threads: () => readonly Worker[], timeout: number, onHang: (thread: Worker) => void) {
    const interval = Math.max(50, Math.min(1000, timeout / 4))
    this.#timer = setInterval(() => {
      const now = Date.now()
      const seen = new Set<Worker>()
      for (const thread of threads()) {
        seen.add(thread)
        const elu = thread.performance.eventLoopUtilization()
        const prev = this.#last.get(thread)
        if (!prev) { this.#last.set(thread, { elu, since: undefined }); continue }
        const busy = thread.performance.eventLoopUtilization(elu, prev.elu).utilization >= STUCK_ELU
        const since = busy ? prev.since ?? now : undefined
        this.#last.set(thread, { elu, since })
        if (since !== undefined && now - since >= timeout) {
          this.#last.delete(thread)
          onHang(thread)
        }
      }
      for (const thread of this.#last.keys()) if (!seen.has(thread)) this.#last.delete(thread)
    }, interval)
    this.#timer.unref()
  }

  stop (): void {
    clearInterval(this.#timer)
  }
}
