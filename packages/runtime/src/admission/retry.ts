// How a connection's requests follow its answers, and which is its first. An immediate retry is a request that
// arrives on a connection right after that connection's 503: clients that do this (retrying
// proxies, closed-loop load testers) make a retry storm (controller.ts). A paced request
// arrives right after the connection's last answer of any kind: its client waited for it.
// The load-shedding plugin marks each connection when its 503 goes out, the hosts of the
// controller (the worker's render queue, the render pool) when a render's answer ends, and
// every host asks here. A connection's first render counts apart (controller.ts, `fresh`):
// when a worker drains or is replaced, its clients move their connections, and each brings
// a first request that is not new load.
import type { Socket } from 'node:net'

/** When the connection's last 503 went out (performance.now()). */
export const kShedAt = Symbol('spindle.shedAt')
/** A request that arrives on a connection this soon (ms) after its 503 is an immediate retry. */
export const RETRY_WINDOW_MS = 100

/** When the connection's last render was answered (performance.now()). */
export const kAnsweredAt = Symbol('spindle.answeredAt')
/**
 * A request that arrives on a connection this soon (ms) after its last answer (a render or
 * a 503) is paced by the answers: its client asked again when the answer came, as closed-loop
 * clients and rate-limited ones (after their burst) do. Such arrivals cannot outrun the
 * thread, so the admission controller's step rule leaves them out. Wide enough for a client
 * starved of CPU: on a 2-core machine whose server is busy, autocannon's next request
 * reached the worker's admission more than 50 ms after the answer it followed (with 50 ms,
 * the rolling-restart benchmark shed 33 and 34 of 1,610 pages; with 150 and 250, none).
 * Narrow enough that open arrivals, a few hundred ms apart on one connection, count.
 */
export const PACED_WINDOW_MS = 150

/** Set on a connection once a render arrived on it: later ones are not its first. */
const kSeen = Symbol('spindle.renderSeen')

export type ShedSocket = Socket & { [kShedAt]?: number, [kAnsweredAt]?: number, [kSeen]?: true }

/** Whether this render is the first on its connection; marks the connection, so it is true once. */
export function firstOnConnection (socket: ShedSocket | null): boolean {
  if (socket === null || socket[kSeen] !== undefined) return false
  socket[kSeen] = true
  return true
}

/** Marks the connection's 503 as sent at `now`. */
export function markShed (socket: ShedSocket | null, now: number): void {
  if (socket) socket[kShedAt] = now
}

/** Marks the connection's render as answered at `now`. */
export function markAnswered (socket: ShedSocket | null, now: number): void {
  if (socket) socket[kAnsweredAt] = now
}

/** Whether a request on `socket` at `now` came right after the connection's last answer (see PACED_WINDOW_MS). */
export function isPaced (socket: ShedSocket | null, now: number): boolean {
  if (!socket) return false
  const at = Math.max(socket[kAnsweredAt] ?? -Infinity, socket[kShedAt] ?? -Infinity)
  return now - at < PACED_WINDOW_MS
}

/** Whether a request on `socket` at `now` is an immediate retry. */
export function isRetry (socket: ShedSocket | null, now: number): boolean {
  const shedAt = socket?.[kShedAt]
  return shedAt !== undefined && now - shedAt < RETRY_WINDOW_MS
}
