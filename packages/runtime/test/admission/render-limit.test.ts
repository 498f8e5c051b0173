import { describe, expect, it } from 'vitest'
import { FORGET_MS, GROW_IDLE, RenderLimit, SHRINK_IDLE } from '../../src/admission/render-limit.ts'

describe('RenderLimit', () => {
  it('starts at the floor and grows by one a poll interval while the loop idles with renders waiting', () => {
    const limit = new RenderLimit()
    let now = 0
    expect(limit.value(2, now)).toBe(2)
    // Renders that wait on I/O: the loop idles most of every interval.
    for (let i = 0; i < 10; i++) { now += 2; limit.judge(0.8, limit.value(2, now), 2, now) }
    expect(limit.value(2, now)).toBe(12)
  })

  it('grows from the renders running, not from a lower limit they already passed', () => {
    const limit = new RenderLimit()
    limit.judge(0.5, 7, 2, 10)
    expect(limit.value(2, 10)).toBe(8)
  })

  it('holds while the loop is mostly busy and shrinks by one an interval while it is busy throughout, down to the floor', () => {
    const limit = new RenderLimit()
    let now = 0
    // Between the two thresholds from the first interval: the limit stays.
    const between = (GROW_IDLE + SHRINK_IDLE) / 2
    for (let i = 0; i < 10; i++) { now += 2; limit.judge(between, 2, 2, now) }
    expect(limit.value(2, now)).toBe(2)
    for (let i = 0; i < 8; i++) { now += 2; limit.judge(1, 2 + i, 2, now) }
    expect(limit.value(2, now)).toBe(10)
    // Computing renders: no idle time at all. The average takes a few intervals to fall under
    // GROW_IDLE (the limit still grows), holds while it is between the thresholds, then the
    // limit shrinks one an interval to the floor.
    const seen: number[] = []
    for (let i = 0; i < 40; i++) { now += 2; limit.judge(0, 10, 2, now); seen.push(limit.value(2, now)) }
    const peak = seen.indexOf(Math.max(...seen))
    expect(peak).toBeLessThanOrEqual(8)
    for (let i = 1; i < seen.length; i++) {
      if (i <= peak) expect(seen[i]! - seen[i - 1]!).toBe(1)
      else expect([0, 1]).toContain(seen[i - 1]! - seen[i]!)
    }
    expect(seen.filter((v, i) => i > peak && v === seen[peak]).length).toBeGreaterThan(0)
    expect(seen.at(-1)).toBe(2)
    // While shedding the floor is one.
    now += 2; limit.judge(0, 2, 1, now)
    expect(limit.value(1, now)).toBe(1)
  })

  it('judges the average of the last intervals, not the last alone: a loop that idles in every other interval grows the limit', () => {
    // One render's burst fills an interval, the next idles half of it: judged one at a time
    // the limit grew and shrank in turn and stayed where it was.
    const limit = new RenderLimit()
    let now = 0
    for (let i = 0; i < 40; i++) { now += 2; limit.judge(i % 2 === 0 ? 0 : 0.5, limit.value(2, now), 2, now) }
    expect(limit.value(2, now)).toBeGreaterThan(20)
  })

  it('never goes below the floor it is asked for, whatever it reached', () => {
    const limit = new RenderLimit()
    limit.judge(0, 1, 1, 0)
    expect(limit.value(1, 0)).toBe(1)
    expect(limit.value(2, 0)).toBe(2)
  })

  it('falls back to the floor once no render waited for FORGET_MS, so a later burst of computing renders does not all start at once', () => {
    const limit = new RenderLimit()
    let now = 0
    for (let i = 0; i < 30; i++) { now += 2; limit.judge(0.9, 2 + i, 2, now) }
    expect(limit.value(2, now)).toBe(32)
    expect(limit.value(2, now + FORGET_MS)).toBe(32)
    expect(limit.value(2, now + FORGET_MS + 1)).toBe(2)
    // A load after that starts afresh: its first interval is judged alone, not with the old average.
    now += FORGET_MS + 2
    limit.judge(0, 2, 2, now)
    expect(limit.value(2, now)).toBe(2)
  })

  it('ignores an interval of no length', () => {
    const limit = new RenderLimit()
    limit.judge(0.9, 2, 2, 0)
    limit.judge(NaN, 3, 2, 1)
    expect(limit.value(2, 1)).toBe(3)
  })
})
