// Messages between the threads that use the fleet store and the one fleet agent of the
// process (in the main thread), over a BroadcastChannel named by the agent. Entry bytes
// never travel in messages: they go through the shared memory both sides already open.

/**
 * A thread missed `key` in shared memory: the agent copies it there from Redis if it can.
 * When Redis has no entry either and `claim` is not false, the agent claims the key for
 * this process (one producer in the fleet) or, when another process holds the claim, waits
 * for that process's entry. `claim: false` is for a thread that will not store what it
 * gets (a HEAD, a range, a request with credentials): it must not make the fleet wait.
 */
export interface LoadMessage { t: 'load', id: string, key: string, claim?: boolean }
/** This process produced nothing for a key it claimed: other processes stop waiting for it. */
export interface ReleaseMessage { t: 'release', key: string }
/** `key` was just stored in shared memory: the agent copies it to Redis. */
export interface SaveMessage { t: 'save', key: string }
export interface DeleteMessage { t: 'delete', key: string }
/** Tags (path tags included) invalidated in shared memory: the agent tells the fleet. */
export interface InvalidateMessage { t: 'invalidate', tags: string[], expire: number }
/** A thread opened the channel: the agent answers with its state. */
export interface HelloMessage { t: 'hello' }
export type ToAgent = LoadMessage | ReleaseMessage | SaveMessage | DeleteMessage | InvalidateMessage | HelloMessage

/**
 * The answer to a LoadMessage: whether the entry is now in shared memory, and whether this
 * process holds the fleet's claim on the key (it should produce it, then set or release).
 */
export interface LoadedMessage { t: 'loaded', id: string, found: boolean, claimed: boolean }
/** The key is being produced by another process: wait for the LoadedMessage up to `waitMs`. */
export interface WaitingMessage { t: 'waiting', id: string }
/** Whether loads are worth asking for (Redis reachable, breaker not open). */
export interface StateMessage { t: 'state', up: boolean }
export type FromAgent = LoadedMessage | WaitingMessage | StateMessage
