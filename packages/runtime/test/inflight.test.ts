import { describe, expect, it } from 'vitest'
import { InflightResponses } from '../src/inflight.ts'

describe('InflightResponses', () => {
  it('holds what was added until it is deleted, and reuses freed slots', () => {
    const inflight = new InflightResponses<{ id: number }>()
    const items = Array.from({ length: 5 }, (_, id) => ({ id }))
    for (const item of items) inflight.add(item)
    expect(inflight.size).toBe(5)
    inflight.delete(items[1]!)
    inflight.delete(items[3]!)
    expect(inflight.size).toBe(3)
    expect([...inflight].map((i) => i.id)).toEqual([0, 2, 4])
    // Two new ones take the freed slots: iteration order follows the slots, nothing is lost.
    const later = [{ id: 5 }, { id: 6 }, { id: 7 }]
    for (const item of later) inflight.add(item)
    expect(inflight.size).toBe(6)
    expect([...inflight].map((i) => i.id).sort()).toEqual([0, 2, 4, 5, 6, 7])
  })

  it('ignores a second add, a second delete and a delete of what it never held', () => {
    const inflight = new InflightResponses<object>()
    const a = {}
    const b = {}
    inflight.add(a)
    inflight.add(a)
    expect(inflight.size).toBe(1)
    inflight.delete(b)
    expect(inflight.size).toBe(1)
    inflight.delete(a)
    inflight.delete(a)
    expect(inflight.size).toBe(0)
    expect([...inflight]).toEqual([])
    // Deleted, it can come back.
    inflight.add(a)
    expect([...inflight]).toEqual([a])
  })

  it('keeps thousands in flight and empties again', () => {
    const inflight = new InflightResponses<{ n: number }>()
    const items = Array.from({ length: 5000 }, (_, n) => ({ n }))
    for (let round = 0; round < 3; round++) {
      for (const item of items) inflight.add(item)
      expect(inflight.size).toBe(5000)
      for (const item of items) inflight.delete(item)
      expect(inflight.size).toBe(0)
    }
    expect([...inflight]).toEqual([])
  })
})
