// The supervisor's side of load shedding, judged from outside the worker's event loop:
// it raises the worker's pressure flag when its heap nears the limit, and calls a worker
// overloaded (not ready) once it has kept shedding for `unreadyAfter`.
import type { ManagedWorker } from './managed-worker.ts'
import { SHED_REASONS } from './protocol.ts'
import type { ResolvedSheddingOptions } from './shed-options.ts'

/** Shedding seen within this window counts as "still shedding". */
const QUIET_AFTER = 1000

export interface ShedWatch {
  worker: ManagedWorker | undefined
  total: number
  lastShedAt: number
  since: number | undefined
  overloaded: boolean
}

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
