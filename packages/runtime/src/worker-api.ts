// What app code running inside a Spindle worker thread can ask the runtime.
import { isMainThread, workerData } from 'node:worker_threads'
import type { WorkerData } from './protocol.ts'

function data (): WorkerData | undefined {
  if (isMainThread) return undefined
  const d = workerData as Partial<WorkerData> | undefined
  return d?.kind === 'spindle-worker' ? d as WorkerData : undefined
}

/** True inside a thread started by `serve()` / `spindle start`. */
export function isSpindleWorker (): boolean {
  return data() !== undefined
}

/** This worker's slot (1..workers) and generation (how many times the slot was started), or undefined outside a worker. */
export function workerInfo (): { id: number, generation: number } | undefined {
  const d = data()
  return d ? { id: d.id, generation: d.generation } : undefined
}

/**
 * A resource the main thread passed to every worker through `serve({ shared })`,
 * e.g. a SharedArrayBuffer; undefined outside a worker or when no such name exists.
 */
export function getSharedResource<T = unknown> (name: string): T | undefined {
  return data()?.shared[name] as T | undefined
}

/** Pages announced by the app's framework adapters for a replacement worker's warm-up, in order. */
const warmupPaths = new Set<string>()
/** At most this many announced pages are warmed: each costs `warmup.requests` renders. */
export const MAX_APP_WARMUP_PATHS = 16

/**
 * Announces pages a worker that replaces another should warm up with before it takes
 * traffic (docs/runtime.md#warm-up), when the configuration names no `warmup.paths` of its
 * own. The framework adapters announce the static page routes of the app's build: the
 * pages users will ask the new worker for, which its JIT and the framework's caches have
 * not seen. Paths only, each starting with '/' (others are ignored), and requested with
 * GET: announce pages, never routes whose GET changes anything. Outside a Spindle worker it
 * does nothing.
 */
export function addWarmupPaths (paths: Iterable<string>): void {
  if (!data()) return
  for (const path of paths) {
    if (warmupPaths.size >= MAX_APP_WARMUP_PATHS) break
    if (path.startsWith('/') && !path.startsWith('//') && !path.includes('?')) warmupPaths.add(path)
  }
}

/** The pages announced with addWarmupPaths (the runtime's warm-up reads them). */
export function announcedWarmupPaths (): readonly string[] {
  return [...warmupPaths]
}

export { giveRenderTurns } from './render-turns.ts'
