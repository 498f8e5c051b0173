import { workerData } from 'node:worker_threads'
import { DEFAULT_SHARED_NAME, getSharedStore } from '../shared-resource.ts'
import type { SharedStore } from '../shared-store.ts'
import { FleetStore } from './fleet-store.ts'

// The worker side only: no Redis client is loaded in the threads that serve.

/** What a worker needs to reach its process's fleet agent; handed over with the store's buffer. */
export interface FleetLink { channel: string, timeout: number, waitMs: number }

const opened = new WeakMap<SharedStore, FleetStore>()

/**
 * The store this thread should use: the fleet store when the main thread started a fleet
 * tier and shared it under `name`, else the shared-memory store shared under `name`, else
 * undefined (then callers make their own, as without a runtime).
 */
export function getCacheStore (name: string = DEFAULT_SHARED_NAME): FleetStore | SharedStore | undefined {
  const memory = getSharedStore(name)
  if (!memory) return undefined
  const link = (workerData as { shared?: Record<string, unknown> } | undefined)?.shared?.[name + 'Fleet'] as FleetLink | undefined
  if (typeof link?.channel !== 'string') return memory
  let store = opened.get(memory)
  if (!store) {
    store = new FleetStore(memory, link.channel, link.timeout, link.waitMs)
    opened.set(memory, store)
  }
  return store
}
