export { createSharedStore, openSharedStore, SharedStore } from './shared-store.ts'
export type { GetOptions, Lease, SetOptions, StoreEntry, StoreStats } from './shared-store.ts'
export type { SharedStoreOptions } from './store-options.ts'
export * from './errors.ts'
