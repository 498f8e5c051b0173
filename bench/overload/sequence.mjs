// What the overload benchmark (run.mjs), its per-request trace (trace.mjs), the goals check
// (goals.mjs) and the surge after idling (after-idle.mjs) share: the page under load, how it
// is asked for, how a Spindle server of it is started, how the capacity is measured, and the
// sequence of loads, as multiples of the capacity.
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { closedLoop } from '../lib/closed-loop.mjs'
import { openLoop } from '../lib/open-loop.mjs'
import { startServer, treeCpuSeconds } from '../lib/processes.mjs'

export const port = 3190
/** The page under load on the server listening on `p`. */
export const urlAt = (p) => `http://127.0.0.1:${p}/dynamic`
export const url = urlAt(port)
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

/**
 * Warms the server at `url` up (JIT, the framework's caches): open-loop load at warmupLevel
 * of `capacity` for `seconds`, then afterWarmup ms of quiet so its backlog clears.
 */
export async function warmUp (capacity, seconds = 10) {
  if (seconds > 0) await openLoop({ url, rate: Math.round(capacity * warmupLevel), duration: seconds, headers })
  await sleep(afterWarmup)
}

/** Control port of the Spindle server on `p`: 9391 for the first, the next ones beside it. */
export const controlPortAt = (p) => 9391 + p - port

/**
 * Starts the Next.js example on Spindle with 2 workers (spindle.mjs) on port `p`, with
 * shedding 'on' or 'off', `shedOptions` passed on as its shedding options (else what
 * SHED_OPTIONS in this process's environment says), `serveOptions` to serve() and
 * `nodeFlags` to its Node.js; resolves once the page answers.
 */
export function startSpindle ({ p = port, shedding = 'on', shedOptions, serveOptions, nodeFlags = [] } = {}) {
  const here = fileURLToPath(new URL('.', import.meta.url))
  return startServer({
    command: process.execPath,
    args: [...nodeFlags, here + 'spindle.mjs'],
    cwd: here,
    env: {
      PORT: String(p), CONTROL_PORT: String(controlPortAt(p)), SHEDDING: shedding,
      ...(shedOptions ? { SHED_OPTIONS: JSON.stringify(shedOptions) } : {}),
      ...(serveOptions ? { SERVE_OPTIONS: JSON.stringify(serveOptions) } : {}),
    },
    readyUrl: urlAt(p),
    headers,
  })
}

/**
 * What `fn` returns, with the cores the server's process tree and this process (the load
 * generator) used meanwhile, and how many seconds it took.
 */
export async function withCores (server, fn) {
  const cpu = treeCpuSeconds(server.pid)
  const own = process.cpuUsage()
  const t0 = performance.now()
  const value = await fn()
  const seconds = (performance.now() - t0) / 1000
  const mine = process.cpuUsage(own)
  return { value, seconds, server: (treeCpuSeconds(server.pid) - cpu) / seconds, generator: (mine.user + mine.system) / 1e6 / seconds }
}
