import { BroadcastChannel, threadId } from 'node:worker_threads'
import type { CacheStore, InvalidateOptions, MaybePromise } from '../cache-store.ts'
import type { GetOptions, Lease, SetOptions, SharedStore, StoreEntry, StoreStats } from '../shared-store.ts'
import { pathTag } from '../tag-table.ts'
import type { FromAgent, ToAgent } from './protocol.ts'

// Longest a miss waits for the agent's first answer when its thread is slow to reply.
const MAIN_THREAD_REPLY_MS = 1000

export interface FleetGetOptions extends GetOptions {
  /**
   * On a miss in memory and in Redis, take the fleet's claim on the key so that other
   * processes wait for this one's entry (default true). Pass false when the caller will not
   * store what it produces: the claim would hold every other process up to `claimMs`.
   */
  claim?: boolean
}

/**
 * The two-tier store a thread uses: the process's shared memory in front, Redis/Valkey
 * behind it through the process's fleet agent. A hit in memory is answered synchronously,
 * exactly as the shared store answers it; only a memory miss returns a promise, settled
 * when the agent has copied the entry from Redis into shared memory or `timeout` ms have
 * passed (see #load), whichever comes first. Writes and invalidations land in memory at once and are
 * handed to the agent without waiting for Redis.
 */
export class FleetStore implements CacheStore {
  readonly memory: SharedStore
  readonly #channel: BroadcastChannel
  readonly #timeout: number
  readonly #waitMs: number
  readonly #waiting = new Map<string, { done: (claimed: boolean) => void, wait: () => void }>()
  readonly #loads = new Map<string, Promise<void>>()
  // Keys this process holds the fleet's claim on (it produces them): released by set or by the lease.
  readonly #claimed = new Set<string>()
  #up = true
  #seq = 0
  #heard: () => void = () => {}
  readonly #firstState = new Promise<void>((resolve) => { this.#heard = resolve })

  /**
   * `channelName` is the agent's (FleetAgent.channelName); `timeout` the longest a miss
   * waits for Redis, `waitMs` the longest it waits for an entry another process is
   * producing, in ms.
   */
  constructor (memory: SharedStore, channelName: string, timeout = 100, waitMs = 5000) {
    this.memory = memory
    this.#timeout = timeout
    this.#waitMs = waitMs
    this.#channel = new BroadcastChannel(channelName)
    this.#channel.onmessage = (event) => this.#received((event as { data: FromAgent }).data)
    // The channel must not keep a thread alive on its own.
    this.#channel.unref()
    this.#post({ t: 'hello' })
  }

  get maxEntryBytes (): number { return this.memory.maxEntryBytes }

  /** Resolves once the agent has told this store its state (at most `timeout` ms). */
  async ready (): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.#firstState, new Promise((resolve) => { timer = setTimeout(resolve, this.#timeout) })])
    clearTimeout(timer)
  }

  #received (message: FromAgent): void {
    if (message.t === 'state') {
      this.#up = message.up
      this.#heard()
    }
    else if (message.t === 'loaded') this.#waiting.get(message.id)?.done(message.claimed)
    else if (message.t === 'waiting') this.#waiting.get(message.id)?.wait()
  }

  #post (message: ToAgent): void {
    this.#channel.postMessage(message)
  }

  get (key: string, options?: FleetGetOptions): MaybePromise<StoreEntry | undefined> {
    const found = this.memory.get(key, { peek: true })
    if (found || !this.#up) {
      if (options?.peek !== true) this.memory.count(found ? (found.stale ? 'stale' : 'hit') : 'miss')
      return found
    }
    const claim = options?.claim !== false
    return this.#load(key, claim).then(() => this.memory.get(key, options?.peek === true ? { peek: true } : undefined))
  }

  /** Asks the agent for `key`; one request per key (and claim) per thread at a time, bounded by the timeouts. */
  #load (key: string, claim: boolean): Promise<void> {
    const loadId = claim ? key : '\0peek\n' + key
    let pending = this.#loads.get(loadId)
    if (pending) return pending
    const id = `${threadId}:${++this.#seq}`
    pending = new Promise<void>((resolve) => {
      // The agent bounds each Redis call by `timeout` and makes two at most (read, claim),
      // so a slow Redis costs a miss 2 x timeout. This bound only covers a main thread
      // starved of CPU (every core rendering); the render then goes ahead without Redis.
      let timer = setTimeout(() => done(false), Math.max(this.#timeout * 3, MAIN_THREAD_REPLY_MS))
      const done = (claimed: boolean): void => {
        clearTimeout(timer)
        this.#waiting.delete(id)
        this.#loads.delete(loadId)
        if (claimed) this.#claimed.add(key)
        resolve()
      }
      // Another process is producing it: waiting for its result beats rendering it again.
      const wait = (): void => {
        clearTimeout(timer)
        timer = setTimeout(() => done(false), this.#waitMs)
      }
      this.#waiting.set(id, { done, wait })
    })
    this.#loads.set(loadId, pending)
    this.#post(claim ? { t: 'load', id, key } : { t: 'load', id, key, claim: false })
    return pending
  }

  /** A lease on `key` among this process's threads; releasing it also gives up the fleet's claim if nothing was set. */
  tryLease (key: string, ttl: number): Lease | undefined {
    const lease = this.memory.tryLease(key, ttl)
    if (!lease) return undefined
    return {
      release: () => {
        lease.release()
        this.unclaim(key)
      },
    }
  }

  /** Gives up the fleet's claim on `key` if this thread holds it and has not set it: other processes stop waiting for this one. */
  unclaim (key: string): void {
    if (this.#claimed.delete(key)) this.#post({ t: 'release', key })
  }

  waitFor (key: string, timeout: number): Promise<boolean> {
    return this.memory.waitFor(key, timeout)
  }

  count (result: 'hit' | 'stale' | 'miss'): void {
    this.memory.count(result)
  }

  stats (): StoreStats {
    return this.memory.stats()
  }

  set (key: string, value: Uint8Array, options?: SetOptions): boolean {
    const stored = this.memory.set(key, value, options)
    if (stored && this.#up) this.#post({ t: 'save', key })
    else if (this.#claimed.has(key)) this.#post({ t: 'release', key })
    this.#claimed.delete(key)
    return stored
  }

  delete (key: string): boolean {
    const deleted = this.memory.delete(key)
    this.#post({ t: 'delete', key })
    return deleted
  }

  /** Invalidates in memory now; the agent spreads it to the fleet (queued while Redis is away). */
  invalidateTags (tags: readonly string[], options?: InvalidateOptions): number {
    const at = this.memory.invalidateTags(tags, options)
    this.#post({ t: 'invalidate', tags: [...tags], expire: options?.expire ?? 0 })
    return at
  }

  invalidatePaths (prefixes: readonly string[], options?: InvalidateOptions): number {
    const at = this.memory.invalidatePaths(prefixes, options)
    this.#post({ t: 'invalidate', tags: prefixes.map(pathTag), expire: options?.expire ?? 0 })
    return at
  }

  tagsRevalidatedAt (tags: readonly string[]): number {
    return this.memory.tagsRevalidatedAt(tags)
  }

  close (): void {
    this.#channel.close()
    for (const { done } of this.#waiting.values()) done(false)
  }
}
