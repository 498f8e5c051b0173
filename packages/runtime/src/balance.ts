// Connection balance between workers. SO_REUSEPORT deals each new connection to a worker by
// a hash of its addresses, so a handful of keep-alive clients (a proxy's pool, a load
// generator) can leave one worker with more of the traffic than another for as long as
// those connections live: the busier one queues and sheds while its sibling idles. The
// supervisor compares the workers' event-loop utilization and asks a worker that runs
// clearly hotter than another to close one connection after its current response
// (`Connection: close`); the client reconnects and the kernel deals the new connection
// again. A few connections a second are enough to even the load out within seconds; when
// every worker is equally busy (or idle) nothing moves.

/** Smoothing of each worker's utilization: weight of the newest supervisor sample. */
const NEW_WEIGHT = 0.2
/** A worker this busy (smoothed utilization) may hand connections off... */
const HOT = 0.75
/** ...to a sibling at least this much less busy. */
const GAP = 0.1
/** At most one hand-off per worker in this many ms. */
const HANDOFF_EVERY = 100

export interface BalanceState {
  /** Smoothed event-loop utilization. */
  load: number
  /** When this worker was last asked to hand a connection off. */
  lastHandoffAt: number
}

export function newBalanceState (): BalanceState {
  return { load: 0, lastHandoffAt: -Infinity }
}

/** Folds one utilization sample (0 to 1) into the smoothed load. */
export function observeLoad (state: BalanceState, utilization: number): void {
  state.load += NEW_WEIGHT * (utilization - state.load)
}

/**
 * Which of the workers (their balance states, listening ones only) should hand one
 * connection off now: the busiest one, when it is hot and another is clearly less busy.
 * Marks the hand-off in its state; returns its index, or -1.
 */
export function pickHandoff (states: readonly BalanceState[], now: number): number {
  if (states.length < 2) return -1
  let hot = 0
  let cool = 0
  for (let i = 1; i < states.length; i++) {
    if (states[i]!.load > states[hot]!.load) hot = i
    if (states[i]!.load < states[cool]!.load) cool = i
  }
  const h = states[hot]!
  if (h.load < HOT || h.load - states[cool]!.load < GAP || now - h.lastHandoffAt < HANDOFF_EVERY) return -1
  h.lastHandoffAt = now
  return hot
}
