// What the overload benchmark (run.mjs), its per-request trace (trace.mjs) and the goals check
// (goals.mjs) share: the page under load, how it is asked for, how the capacity is measured,
// and the sequence of loads, as multiples of the capacity.
import { closedLoop } from '../lib/closed-loop.mjs'

export const port = 3190
export const url = `http://127.0.0.1:${port}/dynamic`
/** A browser's User-Agent, so Next.js streams the page as it would to a user. */
export const headers = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0 Safari/537.36' }
/** Warm-up (JIT, caches) at this share of the capacity, then a pause in ms. */
export const warmupLevel = 0.5
export const afterWarmup = 2000
/** The unloaded measure, before the loaded levels. */
export const unloadedLevel = 0.2
export const levels = [0.8, 1.5, 3]
/** Pause after each loaded level, in ms, so the previous level's backlog clears. */
export const betweenLevels = 3000

/**
 * The capacity of the server at `target` (by default the one listening on `port`), in req/s:
 * a closed loop of 16 connections (what the workers render flat out), `warmupSeconds` of
 * warm-up (none if 0), then `seconds` measured.
 */
export async function closedLoopCapacity (warmupSeconds, seconds, target = url) {
  if (warmupSeconds > 0) await closedLoop({ url: target, connections: 16, duration: warmupSeconds, headers })
  return Math.round((await closedLoop({ url: target, connections: 16, duration: seconds, headers })).rps)
}
