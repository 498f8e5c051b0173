import type { SharedStore } from '../shared-store.ts'
import type { FleetStore } from './fleet-store.ts'

// Which fleet tier runs in front of a shared-memory store in this thread. A purge or delete
// made on the shared-memory store alone would be undone at the next miss, when the entry is
// copied back from Redis: code that was handed the memory store (the control port's purge
// routes, made in the config before the runtime starts the fleet) finds the fleet store here.
// Keyed by the memory's buffer, since the runtime opens its own SharedStore on the config's
// buffer, and kept on globalThis, since the config and the runtime may load two copies of
// this package.
const KEY = Symbol.for('spindle.cache.fleetStores')

function registry (): WeakMap<SharedArrayBuffer, FleetStore> {
  const holder = globalThis as { [KEY]?: WeakMap<SharedArrayBuffer, FleetStore> }
  holder[KEY] ??= new WeakMap()
  return holder[KEY]
}

export function registerFleetStore (store: FleetStore): void {
  registry().set(store.memory.buffer, store)
}

export function unregisterFleetStore (store: FleetStore): void {
  if (registry().get(store.memory.buffer) === store) registry().delete(store.memory.buffer)
}

/** The fleet store in front of `memory` in this thread, if a fleet was started on it. */
export function fleetStoreOf (memory: SharedStore): FleetStore | undefined {
  return registry().get(memory.buffer)
}
