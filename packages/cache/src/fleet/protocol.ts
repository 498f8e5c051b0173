// Messages between the threads that use the fleet store and the one fleet agent of the
// process (in the main thread), over a BroadcastChannel named by the agent. Entry bytes
// never travel in messages: they go through the shared memory both sides already open.

/** A thread missed `key` in shared memory: the agent copies it there from Redis if it can. */
export interface LoadMessage { t: 'load', id: string, key: string }
/** `key` was just stored in shared memory: the agent copies it to Redis. */
export interface SaveMessage { t: 'save', key: string }
export interface DeleteMessage { t: 'delete', key: string }
/** Tags (path tags included) invalidated in shared memory: the agent tells the fleet. */
export interface InvalidateMessage { t: 'invalidate', tags: string[], expire: number }
/** A thread opened the channel: the agent answers with its state. */
export interface HelloMessage { t: 'hello' }
export type ToAgent = LoadMessage | SaveMessage | DeleteMessage | InvalidateMessage | HelloMessage

/** The answer to a LoadMessage: whether the entry is now in shared memory. */
export interface LoadedMessage { t: 'loaded', id: string, found: boolean }
/** Whether loads are worth asking for (Redis reachable, breaker not open). */
export interface StateMessage { t: 'state', up: boolean }
export type FromAgent = LoadedMessage | StateMessage
