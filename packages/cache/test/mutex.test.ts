import { describe, expect, it } from 'vitest'
import { H_LOCK, HEADER_INTS } from '../src/layout.ts'
import { lock, unlock } from '../src/mutex.ts'

describe('the store mutex', () => {
  it('is released only by the thread that holds it', () => {
    const i32 = new Int32Array(new SharedArrayBuffer(HEADER_INTS * 4))
    // Another thread's hold (owners are threadId + 1; this test runs in one thread).
    Atomics.store(i32, H_LOCK, 0x7fff)
    unlock(i32)
    expect(Atomics.load(i32, H_LOCK)).toBe(0x7fff)
    Atomics.store(i32, H_LOCK, 0)
    expect(lock(i32, 1000)).toBe(false)
    unlock(i32)
    expect(Atomics.load(i32, H_LOCK)).toBe(0)
  })
})
