import { threadId } from 'node:worker_threads'
import { H_LOCK, H_LOCK_WAITERS } from './layout.ts'

const OWNER = threadId + 1
const SPINS = 4000
// Atomics.pause (ES2025) tells the CPU this is a spin loop; absent on older engines.
const pause = (Atomics as { pause?: () => void }).pause?.bind(Atomics)

/**
 * A futex-style mutex on one Int32 of shared memory. Critical sections are short copies,
 * so contention is brief; a blocked thread sleeps in Atomics.wait (allowed on Node's main
 * thread too). If the holder does not let go within `timeoutMs` it is taken to have died
 * inside the section (a terminated worker), and the lock is taken over: `lock()` then
 * returns true so the caller can rebuild the structures the dead holder may have left
 * half-written.
 */
export function lock (i32: Int32Array, timeoutMs: number): boolean {
  if (Atomics.compareExchange(i32, H_LOCK, 0, OWNER) === 0) return false
  const deadline = Date.now() + timeoutMs
  for (let spins = 0; ; spins++) {
    // Sections last microseconds: spinning a while is far cheaper than a futex sleep and
    // wake-up (measured: 3x the cached-page throughput on 2 workers).
    if (spins < SPINS) {
      if (Atomics.load(i32, H_LOCK) === 0 && Atomics.compareExchange(i32, H_LOCK, 0, OWNER) === 0) return false
      pause?.()
      continue
    }
    Atomics.add(i32, H_LOCK_WAITERS, 1)
    const holder = Atomics.load(i32, H_LOCK)
    if (holder !== 0) Atomics.wait(i32, H_LOCK, holder, Math.max(1, deadline - Date.now()))
    Atomics.sub(i32, H_LOCK_WAITERS, 1)
    if (Atomics.compareExchange(i32, H_LOCK, 0, OWNER) === 0) return false
    if (Date.now() >= deadline) {
      const stuck = Atomics.load(i32, H_LOCK)
      if (stuck !== 0 && Atomics.compareExchange(i32, H_LOCK, stuck, OWNER) === stuck) return true
    }
  }
}

/**
 * Lets go of the lock, only if this thread holds it: a thread whose hold was taken over
 * (it stalled past the timeout) must not release the new holder's section.
 */
export function unlock (i32: Int32Array): void {
  if (Atomics.compareExchange(i32, H_LOCK, OWNER, 0) !== OWNER) return
  if (Atomics.load(i32, H_LOCK_WAITERS) > 0) Atomics.notify(i32, H_LOCK, 1)
}
