import { randomInt } from 'node:crypto'
import { hash32, SEED_A, SEED_B } from './hash.ts'
import { H_LEASE_RELEASES, L_H1, L_H2, L_TOKEN, LEASE_INTS } from './layout.ts'

/** The right to produce one key; others wait until it is released (or its time runs out). */
export interface Lease {
  /** Lets waiting threads go. Idempotent; a lease that has run out and was taken by another is left alone. */
  release (): void
}

// The store's lock, and its tally of coalesced waits.
interface Guard { lock (): void, unlock (): void, coalesced (): void }

// Waiters re-check at least this often, so a lease whose holder died is noticed when it runs out.
const MAX_SLEEP_MS = 50
const NOOP_LEASE: Lease = Object.freeze({ release () {} })

/**
 * Cross-thread coalescing: a small table of (key hash pair, owner token, deadline). A
 * waiter sleeps with Atomics.waitAsync on one release counter, so waiting never blocks
 * an event loop. Keys are told apart by two 32-bit hashes; a collision only makes a
 * thread wait for an unrelated key, within its bound.
 */
export class Leases {
  readonly #header: Int32Array
  readonly #slots: Int32Array
  readonly #deadlines: Float64Array
  readonly #guard: Guard

  constructor (header: Int32Array, slots: Int32Array, deadlines: Float64Array, guard: Guard) {
    this.#header = header
    this.#slots = slots
    this.#deadlines = deadlines
    this.#guard = guard
  }

  /** Under the store lock. */
  clear (): void {
    this.#slots.fill(0)
    this.#deadlines.fill(0)
  }

  /** Index of a live lease on (h1, h2), or -1; `free` gets the first reusable slot. Under the lock. */
  #scan (h1: number, h2: number, now: number, free?: { index: number }): number {
    const capacity = this.#deadlines.length
    for (let i = 0; i < capacity; i++) {
      const base = i * LEASE_INTS
      const live = this.#slots[base + L_TOKEN] !== 0 && this.#deadlines[i]! > now
      if (live) {
        if (this.#slots[base + L_H1] === h1 && this.#slots[base + L_H2] === h2) return i
      } else if (free && free.index < 0) free.index = i
    }
    return -1
  }

  tryLease (key: string, ttl: number): Lease | undefined {
    const h1 = hash32(key, SEED_A)
    const h2 = hash32(key, SEED_B)
    const token = randomInt(1, 2 ** 31 - 1)
    let index: number
    this.#guard.lock()
    try {
      const free = { index: -1 }
      if (this.#scan(h1, h2, Date.now(), free) >= 0) return undefined
      // A full table means no coalescing for this key, never a refusal to produce it.
      if (free.index < 0) return NOOP_LEASE
      index = free.index
      const base = index * LEASE_INTS
      this.#slots[base + L_H1] = h1
      this.#slots[base + L_H2] = h2
      this.#slots[base + L_TOKEN] = token
      this.#deadlines[index] = Date.now() + ttl
    } finally {
      this.#guard.unlock()
    }
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        this.#guard.lock()
        try {
          if (this.#slots[index * LEASE_INTS + L_TOKEN] === token) {
            this.#slots[index * LEASE_INTS + L_TOKEN] = 0
            this.#deadlines[index] = 0
          }
        } finally {
          this.#guard.unlock()
        }
        Atomics.add(this.#header, H_LEASE_RELEASES, 1)
        Atomics.notify(this.#header, H_LEASE_RELEASES)
      },
    }
  }

  #held (h1: number, h2: number): boolean {
    this.#guard.lock()
    try {
      return this.#scan(h1, h2, Date.now()) >= 0
    } finally {
      this.#guard.unlock()
    }
  }

  async waitFor (key: string, timeout: number): Promise<boolean> {
    const h1 = hash32(key, SEED_A)
    const h2 = hash32(key, SEED_B)
    const deadline = Date.now() + timeout
    let counted = false
    for (;;) {
      // Read the counter before checking, so a release in between wakes us at once.
      const seq = Atomics.load(this.#header, H_LEASE_RELEASES)
      if (!this.#held(h1, h2)) return true
      if (!counted) {
        counted = true
        this.#guard.coalesced()
      }
      const remaining = deadline - Date.now()
      if (remaining <= 0) return false
      const wait = Atomics.waitAsync(this.#header, H_LEASE_RELEASES, seq, Math.min(remaining, MAX_SLEEP_MS))
      if (wait.async) await wait.value
    }
  }
}
