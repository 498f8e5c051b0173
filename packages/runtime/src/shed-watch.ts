// The supervisor's side of load shedding, judged from outside the worker's event loop:
// it raises the worker's pressure flag when its heap nears the limit, and calls a worker
// overloaded (not ready) once it has kept shedding for `unreadyAfter`.
import type { ManagedWorker } from './managed-worker.ts'
import { SHED_REASONS } from './protocol.ts'
import type { ResolvedSheddingOptions } from './shed-options.ts'

/** Shedding seen within this window counts as "still shedding". */
const QUIET_AFTER = 1000
/**
 * A second in which a worker shed at least FLOOD_SHED requests and FLOOD_RATIO times what it
 * served: it is far past its capacity (open arrivals at 3x shed about 2 for each one served),
 * or its clients ask again the moment a 503 arrives (a closed-loop load tester with 10
 * connections made about 8 per one served, with 100 connections over 100).
 */
const FLOOD_WINDOW = 1000
const FLOOD_SHED = 100
const FLOOD_RATIO = 5
/** After a flood is reported for a worker, the next report waits this long. */
const FLOOD_QUIET = 60_000

export interface ShedWatch {
  worker: ManagedWorker | undefined
  total: number
  lastShedAt: number
  since: number | undefined
  overloaded: boolean
  /** The flood check's window: its worker, start, and the counters then. */
  flood?: { worker: ManagedWorker, at: number, shed: number, requests: number, reportedAt: number }
}

export interface Flood { shedPerSecond: number, servedPerSecond: number }

/** Updates `watch` for one supervisor tick; returns true when `overloaded` changed. */
export function judgeShedding (watch: ShedWatch, w: ManagedWorker, now: number, opts: ResolvedSheddingOptions, heapLimitRatio: number): boolean {
  const heap = w.heap
  // Past heapLimitRatio the worker is replaced instead; shedding only helps below that.
  const ratio = opts.maxHeapRatio < heapLimitRatio ? opts.maxHeapRatio : 0
  w.setPressure(ratio > 0 && heap !== undefined && heap.used > heap.limit * ratio)
  let total = 0
  for (let i = 0; i < SHED_REASONS.length; i++) total += w.shedCount(i)
  if (watch.worker !== w) {
    // A new worker in the slot: its counters start from zero, nothing was shed yet.
    watch.worker = w
    watch.total = total
    watch.since = undefined
  } else if (total !== watch.total) {
    watch.total = total
    watch.lastShedAt = now
    watch.since ??= now
  } else if (watch.since !== undefined && now - watch.lastShedAt > QUIET_AFTER) {
    watch.since = undefined
  }
  const overloaded = opts.unreadyAfter > 0 && watch.since !== undefined && now - watch.since >= opts.unreadyAfter
  const changed = overloaded !== watch.overloaded
  watch.overloaded = overloaded
  return changed
}

/**
 * Once per FLOOD_WINDOW: whether the worker shed far more requests than it served in the
 * window (see FLOOD_RATIO), at most once per FLOOD_QUIET; undefined otherwise. Call it after
 * judgeShedding() in the same tick: it reads the shed total that one counted.
 */
export function judgeFlood (watch: ShedWatch, w: ManagedWorker, now: number): Flood | undefined {
  const shed = watch.total
  const requests = w.requests
  const f = watch.flood
  if (!f || f.worker !== w) {
    watch.flood = { worker: w, at: now, shed, requests, reportedAt: -Infinity }
    return undefined
  }
  const span = now - f.at
  if (span < FLOOD_WINDOW) return undefined
  const newlyShed = shed - f.shed
  // The request counter wraps at 2^32.
  const served = Math.max(0, ((requests - f.requests) >>> 0) - newlyShed)
  f.at = now
  f.shed = shed
  f.requests = requests
  if (newlyShed * 1000 / span < FLOOD_SHED || newlyShed < FLOOD_RATIO * Math.max(1, served) || now - f.reportedAt < FLOOD_QUIET) return undefined
  f.reportedAt = now
  return { shedPerSecond: Math.round(newlyShed * 1000 / span), servedPerSecond: Math.round(served * 1000 / span) }
}
