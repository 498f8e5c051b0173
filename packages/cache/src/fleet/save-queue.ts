/**
 * Writes to Redis, a few at a time. A burst of new entries (a cold start, a revalidated
 * tag) would otherwise send them all at once, time out together and open the circuit
 * breaker. A key already waiting is not queued twice (its write reads the latest value);
 * past `limit` waiting keys new ones are dropped (they stay in memory only).
 */
export class SaveQueue {
  readonly #concurrency: number
  readonly #limit: number
  readonly #run: (key: string) => Promise<void>
  readonly #dropped: () => void
  readonly #waiting: string[] = []
  // Every key queued or being written, with the promise of its write.
  readonly #pending = new Map<string, { promise: Promise<void>, resolve: () => void }>()
  #active = 0

  constructor (concurrency: number, limit: number, run: (key: string) => Promise<void>, dropped: () => void) {
    this.#concurrency = concurrency
    this.#limit = limit
    this.#run = run
    this.#dropped = dropped
  }

  add (key: string): void {
    if (this.#pending.has(key) && this.#waiting.includes(key)) return
    if (this.#waiting.length >= this.#limit) {
      this.#dropped()
      return
    }
    let resolve = (): void => {}
    const promise = new Promise<void>((done) => { resolve = done })
    const before = this.#pending.get(key)
    this.#pending.set(key, { promise: before ? before.promise.then(() => promise) : promise, resolve })
    this.#waiting.push(key)
    this.#pump()
  }

  /** Settles when the writes of `key` queued so far are done. */
  settled (key: string): Promise<void> | undefined {
    return this.#pending.get(key)?.promise
  }

  get size (): number { return this.#waiting.length }

  #pump (): void {
    while (this.#active < this.#concurrency && this.#waiting.length > 0) {
      const key = this.#waiting.shift()!
      const entry = this.#pending.get(key)!
      this.#active++
      this.#run(key).catch(() => {}).finally(() => {
        this.#active--
        entry.resolve()
        if (this.#pending.get(key) === entry) this.#pending.delete(key)
        this.#pump()
      })
    }
  }
}
