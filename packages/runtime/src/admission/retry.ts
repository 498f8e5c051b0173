// Immediate retries: a request that arrives on a connection right after that connection's
// 503. Clients that do this (retrying proxies, closed-loop load testers) make a retry storm
// (controller.ts); the load-shedding plugin marks each connection when its 503 goes out, and
// every host of the controller (the worker's render queue, the render pool) asks here.
import type { Socket } from 'node:net'

/** When the connection's last 503 went out (performance.now()). */
export const kShedAt = Symbol('spindle.shedAt')
/** A request that arrives on a connection this soon (ms) after its 503 is an immediate retry. */
export const RETRY_WINDOW_MS = 100

export type ShedSocket = Socket & { [kShedAt]?: number }

/** Marks the connection's 503 as sent at `now`. */
export function markShed (socket: ShedSocket | null, now: number): void {
  if (socket) socket[kShedAt] = now
}

/** Whether a request on `socket` at `now` is an immediate retry. */
export function isRetry (socket: ShedSocket | null, now: number): boolean {
  const shedAt = socket?.[kShedAt]
  return shedAt !== undefined && now - shedAt < RETRY_WINDOW_MS
}
