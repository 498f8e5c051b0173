// Whether a render pool runs in this thread. The load-shedding plugin reads it: while one
// runs, the pool's own admission (from its exact queue of free slots) decides for the
// renders it serves, and the thread's render queue, built for renders that run on this
// event loop two at a time, must not hold them back a second time. A global keyed by
// Symbol.for, so two copies of this package in one app still agree.
const kPools = Symbol.for('spindle.renderPools')
const holder = globalThis as { [kPools]?: number }

/** Counts a pool that starts (+1) or closes (-1) in this thread. */
export function countRenderPool (delta: 1 | -1): void {
  holder[kPools] = Math.max(0, (holder[kPools] ?? 0) + delta)
}

/** Whether any render pool runs in this thread. */
export function renderPoolRunning (): boolean {
  return (holder[kPools] ?? 0) > 0
}
