import { workerData } from 'node:worker_threads'
import { SharedStore } from './shared-store.ts'

/** The name under which `serve({ shared })` hands the store's buffer to workers, by convention. */
export const DEFAULT_SHARED_NAME = 'spindleCache'

const opened = new WeakMap<SharedArrayBuffer, SharedStore>()

/**
 * The store the main thread shared with this worker through the runtime's `shared` option
 * (read from worker_threads.workerData, so the runtime is not needed), or undefined in the
 * main thread or when none was shared under `name`. One instance per buffer and thread.
 */
export function getSharedStore (name: string = DEFAULT_SHARED_NAME): SharedStore | undefined {
  const data = workerData as { shared?: Record<string, unknown> } | undefined
  const buffer = data?.shared?.[name]
  if (!(buffer instanceof SharedArrayBuffer)) return undefined
  let store = opened.get(buffer)
  if (!store) {
    store = new SharedStore(buffer)
    opened.set(buffer, store)
  }
  return store
}
