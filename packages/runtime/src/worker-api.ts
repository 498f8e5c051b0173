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
