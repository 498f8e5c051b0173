import { DEFAULT_SHARED_NAME } from '../shared-resource.ts'
import { createSharedStore, type SharedStore } from '../shared-store.ts'
import type { SharedStoreOptions } from '../store-options.ts'
import { FleetAgent, type FleetAgentOptions } from './fleet-agent.ts'
import { FleetStore } from './fleet-store.ts'
import { registerFleetStore, unregisterFleetStore } from './registry.ts'
import type { FleetLink } from './thread-store.ts'

export type { FleetLink } from './thread-store.ts'
export { getCacheStore } from './thread-store.ts'

export interface Fleet {
  /** The two-tier store for this thread. Other threads open theirs with `getCacheStore()`. */
  readonly store: FleetStore
  readonly agent: FleetAgent
  /** Pass to `serve({ shared })`: the store's buffer and the link to the agent. */
  readonly shared: Readonly<Record<string, SharedArrayBuffer | FleetLink>>
  close (): Promise<void>
}

export type StartFleetOptions = Omit<FleetAgentOptions, 'memory'> & {
  /** The shared-memory tier; made with `storeOptions` when not given. */
  memory?: SharedStore
  storeOptions?: SharedStoreOptions
}

/**
 * Starts the fleet tier of a process: one Redis/Valkey client (its agent) in this thread,
 * in front of it the shared-memory store. Call once per process, in the thread that owns
 * the store (the main thread under `spindle start`, which does it for `cache: { url }`).
 * Never rejects because Redis is down: the process then serves from memory and connects
 * when Redis is back.
 */
export async function startFleet (options: StartFleetOptions): Promise<Fleet> {
  const { memory: given, storeOptions, ...agentOptions } = options
  const memory = given ?? createSharedStore(storeOptions)
  const agent = new FleetAgent({ ...agentOptions, memory })
  const link: FleetLink = { channel: agent.channelName, timeout: agent.options.timeout, waitMs: agent.options.waitMs }
  await agent.start()
  const store = new FleetStore(memory, link.channel, link.timeout, link.waitMs)
  await store.ready()
  registerFleetStore(store)
  return {
    store,
    agent,
    shared: Object.freeze({ [DEFAULT_SHARED_NAME]: memory.buffer, [DEFAULT_SHARED_NAME + 'Fleet']: link }),
    async close () {
      unregisterFleetStore(store)
      store.close()
      await agent.close()
    },
  }
}
