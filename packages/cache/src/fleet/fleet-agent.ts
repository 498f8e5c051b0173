import { randomUUID } from 'node:crypto'
import { BroadcastChannel } from 'node:worker_threads'
import { Redis, type RedisOptions } from 'ioredis'
import type { SharedStore } from '../shared-store.ts'
import { pathTags } from '../tag-table.ts'
import { type BreakerState, CircuitBreaker } from './circuit-breaker.ts'
import { isServableMeta } from '../entry-meta.ts'
import { decodeEntry, encodeEntry, type EntryHeader } from './entry-codec.ts'
import { type FleetOptions, resolveFleetOptions, type ResolvedFleetOptions } from './fleet-options.ts'
import { FleetCounters } from './fleet-metrics.ts'
import { SaveQueue } from './save-queue.ts'
import type { FromAgent, ToAgent } from './protocol.ts'

export interface FleetLogger {
  info (obj: object, msg: string): void
  warn (obj: object, msg: string): void
}

export interface FleetAgentOptions extends FleetOptions {
  /** The process's shared-memory store: the tier in front of Redis. */
  memory: SharedStore
  /** Told once per change of connection or breaker state. Default: one JSON line on stderr. */
  logger?: FleetLogger
  /** Milliseconds clock for the circuit breaker. Default Date.now. */
  now?: () => number
}

export interface LoadResult {
  /** The entry is in shared memory now. */
  found: boolean
  /** This process holds the fleet's claim on the key: it should produce it. */
  claimed: boolean
}

interface Waiters { waiting: boolean, calls: Array<() => void> }

const MISS: LoadResult = Object.freeze({ found: false, claimed: false })
// Writes to Redis in flight at once, and waiting at most (SaveQueue).
const SAVE_CONCURRENCY = 16
const SAVE_QUEUE_LIMIT = 4096
// How often a process waiting for another's entry looks for it.
const POLL_MS = 15
// Deletes the claim only if this process still holds it (it may have run out and been taken).
const RELEASE_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

const stderrLogger: FleetLogger = {
  info: (obj, msg) => { process.stderr.write(JSON.stringify({ level: 'info', msg, ...obj }) + '\n') },
  warn: (obj, msg) => { process.stderr.write(JSON.stringify({ level: 'warn', msg, ...obj }) + '\n') },
}

/**
 * The one Redis/Valkey client of a process, in the thread that owns the shared store (the
 * supervisor under `spindle start`). Threads reach it over a BroadcastChannel
 * (`channelName`): they ask it to copy an entry from Redis into shared memory on a miss, to
 * copy a new entry to Redis, and to spread an invalidation.
 *
 * Tag invalidation: every tag has a version in one Redis hash, bumped by HINCRBY, and each
 * bump is published. The agent keeps the versions it knows; a published bump marks the tag
 * in shared memory at once, and after any reconnect the whole hash is read again, so a
 * process that missed messages still ends up right. An entry in Redis records its tags'
 * versions when it was written: a load that finds a newer version treats it as gone. The
 * versions are counters, not clock readings, so clock skew between pods cannot hide one.
 */
export class FleetAgent {
  readonly channelName = `spindle-cache-fleet:${randomUUID()}`
  readonly counters = new FleetCounters()
  readonly #o: ResolvedFleetOptions
  readonly #memory: SharedStore
  readonly #log: FleetLogger
  readonly #id = randomUUID()
  readonly #redis: Redis
  readonly #sub: Redis
  readonly #channel: BroadcastChannel
  readonly #breaker: CircuitBreaker
  readonly #versions = new Map<string, number>()
  // Invalidations not yet in Redis (it was unreachable): tag -> expire ms. Replayed on reconnect.
  readonly #pending = new Map<string, number>()
  readonly #sending = new Set<string>()
  // Keys deleted in this turn of the loop, sent together (#sendDeletes).
  readonly #deletes = new Set<string>()
  readonly #loads = new Map<string, Promise<LoadResult>>()
  readonly #waiters = new Map<string, Waiters>()
  readonly #saves = new SaveQueue(SAVE_CONCURRENCY, SAVE_QUEUE_LIMIT, (key) => this.#save(key), () => { this.counters.dropped++ })
  #cmdReady = false
  #subReady = false
  #synced = false
  #syncedOnce = false
  #epoch: string | undefined
  #up = false
  #closed = false

  constructor (options: FleetAgentOptions) {
    const { memory, logger, now, ...fleet } = options
    this.#o = resolveFleetOptions(fleet)
    this.#memory = memory
    this.#log = logger ?? stderrLogger
    this.#breaker = new CircuitBreaker({
      failureThreshold: this.#o.failureThreshold,
      openMs: this.#o.openMs,
      now: now ?? Date.now,
      onChange: (to, from) => this.#breakerChanged(to, from),
    })
    const c = this.#o.connection
    const base: RedisOptions = {
      host: c.host,
      port: c.port,
      db: c.db,
      ...(c.username ? { username: c.username } : {}),
      ...(c.password ? { password: c.password } : {}),
      ...(c.tls ? { tls: {} } : {}),
      connectTimeout: Math.max(1000, this.#o.timeout * 10),
      retryStrategy: (attempt) => this.#reconnectDelay(attempt),
      maxRetriesPerRequest: 0,
      lazyConnect: true,
    }
    // Commands fail at once while disconnected instead of queueing behind a dead socket.
    this.#redis = new Redis({ ...base, enableOfflineQueue: false, commandTimeout: this.#o.timeout, connectionName: 'spindle-cache' })
    this.#sub = new Redis({ ...base, connectionName: 'spindle-cache-sub' })
    this.#redis.on('ready', () => { this.#cmdReady = true; void this.#connected() })
    this.#sub.on('ready', () => { this.#subReady = true; void this.#connected() })
    this.#redis.on('close', () => { this.#cmdReady = false; this.#disconnected() })
    this.#sub.on('close', () => { this.#subReady = false; this.#disconnected() })
    // Errors are counted and reported through state changes, never thrown or logged per request.
    this.#redis.on('error', () => { this.counters.errors++ })
    this.#sub.on('error', () => { this.counters.errors++ })
    this.#sub.on('messageBuffer', (_channel: Buffer, message: Buffer) => this.#received(message))
    this.#channel = new BroadcastChannel(this.channelName)
    this.#channel.onmessage = (event) => this.#handle((event as { data: ToAgent }).data)
  }

  /** Connects and waits at most `timeout` x 10 ms for Redis: a server that is down does not stop the process from starting. */
  async start (): Promise<void> {
    this.#redis.connect().catch(() => {})
    this.#sub.connect().then(() => this.#sub.subscribe(this.#o.prefix + 'invalidate')).catch(() => {})
    const deadline = Date.now() + Math.max(1000, this.#o.timeout * 10)
    while (!this.#up && Date.now() < deadline && !this.#closed) await new Promise((resolve) => setTimeout(resolve, 10))
    if (!this.#up) this.#log.warn({ url: redacted(this.#o.url) }, 'fleet cache unreachable at start: serving from memory until it is back')
  }

  get up (): boolean { return this.#up }
  get options (): ResolvedFleetOptions { return this.#o }
  get breakerState (): BreakerState { return this.#breaker.state }

  #reconnectDelay (attempt: number): number | null {
    if (this.#closed) return null
    const ceiling = Math.min(this.#o.maxReconnectDelay, this.#o.reconnectDelay * 2 ** Math.min(attempt - 1, 20))
    // Full jitter on half the delay: a fleet that lost Redis together does not reconnect together.
    return Math.round(ceiling / 2 + Math.random() * ceiling / 2)
  }

  async #connected (): Promise<void> {
    if (!this.#cmdReady || !this.#subReady || this.#synced || this.#closed) return
    try {
      await this.#syncTags()
      this.#synced = true
      this.counters.connects++
      this.#log.info({ url: redacted(this.#o.url) }, 'fleet cache connected')
      this.#breaker.success()
      this.#setUp()
      await this.#flush()
    } catch {
      this.#breaker.failure()
      // Try again on the next ready; until then the process serves from memory.
      setTimeout(() => { void this.#connected() }, this.#o.reconnectDelay).unref()
    }
  }

  #disconnected (): void {
    if (this.#closed) return
    if (this.#synced) {
      this.#synced = false
      this.counters.disconnects++
      this.#log.warn({ url: redacted(this.#o.url) }, 'fleet cache disconnected: serving from memory')
    }
    this.#breaker.trip()
    this.#setUp()
  }

  #breakerChanged (to: BreakerState, from: BreakerState): void {
    this.counters.breakerChanges++
    if (to === 'open') this.#log.warn({ from }, 'fleet cache circuit breaker open')
    else if (to === 'closed') this.#log.info({ from }, 'fleet cache circuit breaker closed')
    this.#setUp()
  }

  #setUp (): void {
    const up = this.#synced && this.#breaker.state !== 'open' && !this.#closed
    if (up === this.#up) return
    this.#up = up
    this.#post({ t: 'state', up })
  }

  #post (message: FromAgent): void {
    if (!this.#closed) this.#channel.postMessage(message)
  }

  /**
   * Reads every tag version; bumps this process missed are applied to shared memory. The
   * epoch key tells a Redis that lost its data (restarted without persistence): versions
   * then start again from zero, so every tag Redis knows is applied and the old versions
   * are forgotten.
   */
  async #syncTags (): Promise<void> {
    const epochKey = this.#o.prefix + 'epoch'
    await this.#redis.set(epochKey, randomUUID(), 'NX')
    const replies = await this.#redis.multi().get(epochKey).hgetall(this.#o.prefix + 'tags').exec()
    const failed = replies?.find(([err]) => err)
    if (failed) throw failed[0]
    const epoch = replies?.[0]?.[1] as string | null
    const all = (replies?.[1]?.[1] ?? {}) as Record<string, string>
    const lost = this.#epoch !== undefined && epoch !== this.#epoch
    if (lost) this.#versions.clear()
    this.#epoch = epoch ?? undefined
    const changed: string[] = []
    for (const [tag, text] of Object.entries(all)) {
      const version = Number(text)
      if (version > (this.#versions.get(tag) ?? 0)) {
        this.#versions.set(tag, version)
        changed.push(tag)
      }
    }
    // At the first sync shared memory holds nothing from before: only the versions matter.
    if (this.#syncedOnce && changed.length > 0) {
      this.#memory.invalidateTags(changed)
      this.counters.invalidationsReceived += changed.length
    }
    this.#syncedOnce = true
  }

  /**
   * A published bump. The channel is Redis', so anyone who can publish there can send
   * anything: what is not a bump of this format is ignored, and nothing here may throw
   * (this runs in the client's event handler, where a throw would end the process).
   */
  #received (message: Buffer): void {
    let parsed: unknown
    try {
      parsed = JSON.parse(message.toString('utf8'))
    } catch {
      return
    }
    if (typeof parsed !== 'object' || parsed === null) return
    const { o, t, e, d } = parsed as Record<string, unknown>
    if (o === this.#id) return
    if (Array.isArray(d)) {
      for (const key of d as unknown[]) if (typeof key === 'string') this.#memory.delete(key)
      this.counters.deletesReceived += d.length
    }
    if (!Array.isArray(t)) return
    const changed: string[] = []
    for (const bump of t as unknown[]) {
      if (!Array.isArray(bump)) continue
      const [tag, version] = bump as unknown[]
      if (typeof tag === 'string' && typeof version === 'number' && version > (this.#versions.get(tag) ?? 0)) {
        this.#versions.set(tag, version)
        changed.push(tag)
      }
    }
    if (changed.length === 0) return
    try {
      this.#memory.invalidateTags(changed, { expire: typeof e === 'number' && e >= 0 ? e : 0 })
      this.counters.invalidationsReceived += changed.length
    } catch {
      this.counters.failures++
    }
  }

  #handle (message: ToAgent): void {
    if (this.#closed) return
    switch (message.t) {
      case 'hello':
        this.#post({ t: 'state', up: this.#up })
        break
      case 'load':
        void this.load(message.key, () => this.#post({ t: 'waiting', id: message.id }), message.claim !== false)
          .then(({ found, claimed }) => this.#post({ t: 'loaded', id: message.id, found, claimed }))
        break
      case 'save':
        this.#saves.add(message.key)
        break
      case 'release':
        void this.#release(message.key)
        break
      case 'delete':
        if (this.#deletes.size === 0) setImmediate(() => this.#sendDeletes())
        this.#deletes.add(message.key)
        break
      case 'invalidate':
        for (const tag of message.tags) this.#pending.set(tag, Math.min(this.#pending.get(tag) ?? Infinity, message.expire))
        void this.#flush()
        break
    }
  }

  /**
   * Deletes keys in Redis, then from every other process's memory (a purge by key, the
   * invalidation after a POST): without the message each would serve its copy until it
   * expired. The deletes of one turn of the loop (a POST drops its URL, its Location and
   * their partial responses) go as one transaction and one message.
   */
  #sendDeletes (): void {
    const keys = [...this.#deletes]
    this.#deletes.clear()
    void this.#call(() => this.#redis.multi()
      .del(...keys.map((key) => this.#entryKey(key)))
      .publish(this.#o.prefix + 'invalidate', JSON.stringify({ o: this.#id, d: keys }))
      .exec())
  }

  #entryKey (key: string): string {
    return this.#o.prefix + 'e:' + key
  }

  /**
   * Runs a Redis call unless the breaker is open; failures are counted, never thrown. A
   * pipeline or transaction counts as failed when any of its commands failed: ioredis
   * settles `exec()` with each command's error (a timeout among them) instead of rejecting.
   */
  async #call<T> (fn: () => Promise<T>): Promise<T | undefined> {
    if (!this.#up || !this.#breaker.allow()) {
      this.counters.skipped++
      return undefined
    }
    try {
      const result = await fn()
      if (isBatch(result)) {
        const failed = result.find(([err]) => err)
        if (failed) throw failed[0]
      }
      // A call that was in flight when the connection went says nothing about the next one.
      if (this.#up) this.#breaker.success()
      return result
    } catch {
      this.counters.failures++
      if (this.#up) this.#breaker.failure()
      return undefined
    }
  }

  /**
   * Copies `key` from Redis into shared memory. When Redis has none and `claim` is true,
   * claims the key for this process (`claimed`: produce it, then set or release) or, when
   * another process holds the claim, calls `onWaiting` and polls for that process's entry
   * up to waitMs. Without `claim` (the caller will not store what it gets: a HEAD, a range,
   * a request with credentials) a miss in Redis is just a miss. Concurrent loads of one
   * key share one Redis round trip. Never rejects: anything that goes wrong is a miss.
   */
  load (key: string, onWaiting: () => void = () => {}, claim = true): Promise<LoadResult> {
    const id = claim ? key : '\0peek\n' + key
    let pending = this.#loads.get(id)
    if (!pending) {
      const waiters: Waiters = { waiting: false, calls: [] }
      const started = (): void => {
        waiters.waiting = true
        for (const call of waiters.calls) call()
      }
      pending = this.#load(key, started, claim)
        .catch(() => { this.counters.loadMisses++; return MISS })
        .finally(() => { this.#loads.delete(id); this.#waiters.delete(id) })
      this.#loads.set(id, pending)
      this.#waiters.set(id, waiters)
    }
    const waiters = this.#waiters.get(id)
    // A thread that joins a load already waiting for another process is told at once.
    if (waiters?.waiting) onWaiting()
    else waiters?.calls.push(onWaiting)
    return pending
  }

  async #load (key: string, onWaiting: () => void, claim: boolean): Promise<LoadResult> {
    const entryKey = this.#entryKey(key)
    const raw = await this.#call(() => this.#redis.getBuffer(entryKey))
    if (raw === undefined) return MISS
    // An entry revalidated since it was written, or refused, is treated as none: claim it and render it once.
    const copied = raw === null ? 'none' : await this.#copy(key, raw)
    if (copied === 'copied') return { found: true, claimed: false }
    if (!claim) {
      this.counters.loadMisses++
      return MISS
    }
    const claimed = await this.#call(() => this.#redis.set(this.#claimKey(key), this.#id, 'PX', this.#o.claimMs, 'NX'))
    if (claimed === 'OK') {
      this.counters.loadMisses++
      return { found: false, claimed: true }
    }
    if (claimed === undefined) return MISS
    // Another process is producing it: one render for the fleet, the others wait for it.
    onWaiting()
    this.counters.waits++
    const deadline = Date.now() + this.#o.waitMs
    while (Date.now() < deadline && this.#up) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
      const replies = await this.#call(() => this.#redis.multi().getBuffer(entryKey).exists(this.#claimKey(key)).exec())
      if (!replies) break
      const entry = replies[0]?.[1] as Buffer | null
      if (entry && await this.#copy(key, entry) === 'copied') return { found: true, claimed: false }
      if (replies[1]?.[1] === 0) break
    }
    this.counters.loadMisses++
    return MISS
  }

  /**
   * Puts an entry read from Redis into shared memory, unless one of its tags was revalidated
   * since it was written. An entry this process could not use (damaged, too large once
   * inflated, metadata the HTTP cache cannot serve: entry-codec.ts, entry-meta.ts) is
   * refused and counted, and stays out of memory; the key is then produced again, which
   * replaces it in Redis.
   */
  async #copy (key: string, raw: Buffer): Promise<'copied' | 'revalidated' | 'refused'> {
    let entry: Awaited<ReturnType<typeof decodeEntry>>
    try {
      entry = await decodeEntry(raw, this.#memory.maxEntryBytes)
      if (!isServableMeta(key, entry.header.m)) throw new Error('metadata the cache cannot serve')
    } catch {
      this.counters.refused++
      return 'refused'
    }
    const { header, value } = entry
    if (this.#invalidatedSince(header)) {
      // Revalidated after it was written: gone for everyone.
      void this.#call(() => this.#redis.del(this.#entryKey(key)))
      this.counters.loadMisses++
      return 'revalidated'
    }
    const stored = this.#memory.set(key, value, { tags: header.t, path: header.p, staleAt: header.s, expireAt: header.x, meta: header.m })
    if (stored) this.counters.loadHits++
    else this.counters.loadMisses++
    return stored ? 'copied' : 'refused'
  }

  #claimKey (key: string): string {
    return this.#o.prefix + 'l:' + key
  }

  /** Gives up this process's claim (after any save of the key in progress): waiting processes produce it themselves. */
  async #release (key: string): Promise<void> {
    await this.#saves.settled(key)
    await this.#unclaim(key)
  }

  /** Deletes the claim on `key` if this process holds it: a save that writes nothing must not leave the fleet waiting. */
  async #unclaim (key: string): Promise<void> {
    await this.#call(() => this.#redis.eval(RELEASE_SCRIPT, 1, this.#claimKey(key), this.#id))
  }

  #tagsOf (header: EntryHeader): string[] {
    const tags = header.t ?? []
    return header.p === undefined ? tags : [...tags, ...pathTags(header.p)]
  }

  #invalidatedSince (header: EntryHeader): boolean {
    for (const tag of this.#tagsOf(header)) {
      if ((this.#versions.get(tag) ?? 0) > (header.v?.[tag] ?? 0)) return true
      // Revalidated here and not yet in Redis: its version there is still the old one.
      if (this.#pending.has(tag) || this.#sending.has(tag)) return true
    }
    return false
  }

  async #save (key: string): Promise<void> {
    if (!this.#up) return
    const entry = this.#memory.get(key, { peek: true })
    if (!entry) return this.#unclaim(key)
    const header: EntryHeader = {}
    if (entry.tags.length > 0) header.t = [...entry.tags]
    if (entry.path !== undefined) header.p = entry.path
    if (Number.isFinite(entry.staleAt)) header.s = entry.staleAt
    if (Number.isFinite(entry.expireAt)) header.x = entry.expireAt
    if (entry.meta !== undefined) header.m = entry.meta
    const versions: Record<string, number> = {}
    for (const tag of this.#tagsOf(header)) {
      const v = this.#versions.get(tag)
      if (v !== undefined) versions[tag] = v
    }
    if (Object.keys(versions).length > 0) header.v = versions
    const raw = await encodeEntry(header, entry.value, this.#o.compressAbove)
    if (raw.length > this.#o.maxEntryBytes) {
      this.counters.oversize++
      return this.#unclaim(key)
    }
    // Every entry has a TTL, so a server full under volatile-lru evicts entries, never the tag versions.
    const ttl = Math.min(this.#o.maxTtl, Number.isFinite(entry.expireAt) ? Math.ceil(entry.expireAt - Date.now()) : Infinity)
    if (ttl <= 0) return this.#unclaim(key)
    // Writing the entry ends any claim on it: processes waiting for it find it at their next poll.
    const done = await this.#call(() => this.#redis.pipeline().set(this.#entryKey(key), raw, 'PX', ttl).del(this.#claimKey(key)).exec())
    if (done !== undefined) this.counters.saves++
  }

  /** Sends the invalidations Redis has not yet seen: bump each tag's version, publish the bumps. */
  async #flush (): Promise<void> {
    if (this.#pending.size === 0 || !this.#up) return
    const batch = [...this.#pending]
    this.#pending.clear()
    for (const [tag] of batch) this.#sending.add(tag)
    const tagsKey = this.#o.prefix + 'tags'
    const result = await this.#call(async () => {
      const multi = this.#redis.multi()
      for (const [tag] of batch) multi.hincrby(tagsKey, tag, 1)
      const replies = await multi.exec()
      const bumps = batch.map(([tag, expire], i) => [tag, Number(replies?.[i]?.[1]), expire] as const)
      const byExpire = new Map<number, Array<[string, number]>>()
      for (const [tag, version, expire] of bumps) {
        if (!Number.isFinite(version)) throw new Error('HINCRBY failed')
        if (version > (this.#versions.get(tag) ?? 0)) this.#versions.set(tag, version)
        const group = byExpire.get(expire) ?? []
        group.push([tag, version])
        byExpire.set(expire, group)
      }
      for (const [expire, t] of byExpire) await this.#redis.publish(this.#o.prefix + 'invalidate', JSON.stringify({ o: this.#id, t, e: expire }))
      return bumps.length
    })
    for (const [tag] of batch) this.#sending.delete(tag)
    if (result === undefined) {
      for (const [tag, expire] of batch) this.#pending.set(tag, Math.min(this.#pending.get(tag) ?? Infinity, expire))
    } else this.counters.invalidationsSent += result
  }

  /** Prometheus text for the runtime's /metrics. */
  metrics (): string {
    return this.counters.render({ up: this.#up, breaker: this.#breaker.state, pending: this.#pending.size })
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#channel.close()
    // A cache owes the server no goodbye: QUIT would wait on a dead connection.
    this.#redis.disconnect()
    this.#sub.disconnect()
  }
}

function redacted (url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return 'an invalid URL'
  }
}

/** Whether a reply is what ioredis' `exec()` settles with: one `[null, result]` or `[error]` per command. */
function isBatch (value: unknown): value is Array<[Error | null, unknown?]> {
  return Array.isArray(value) && value.every((reply) => Array.isArray(reply) && (reply[0] === null || reply[0] instanceof Error))
}
