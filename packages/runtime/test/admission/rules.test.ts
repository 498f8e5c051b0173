import { describe, expect, it } from 'vitest'
import { DemandWindow } from '../../src/admission/demand-window.ts'
import { LONG_LIVED, PaceMeter } from '../../src/admission/pace.ts'
import { StepRule } from '../../src/admission/step-rule.ts'

// The admission controller's rules, each on its own with a fake clock (ms). The controller's
// scenarios (controller.test.ts) play them together.

/** Feeds `rule` arrivals at `times` the pace (renders of `pace` ms) from `from` for `ms`, ends at the pace; returns when it first held, or undefined. */
function play (rule: StepRule, pace: number, times: number, from: number, ms: number, opts: { paced?: boolean, joined?: boolean } = {}): number | undefined {
  let held: number | undefined
  let owedArrivals = 0
  let owedEnds = 0
  for (let t = from; t < from + ms; t += 1) {
    owedEnds += 1 / pace
    for (; owedEnds >= 1; owedEnds--) rule.ended(t)
    owedArrivals += times / pace
    for (; owedArrivals >= 1; owedArrivals--) {
      rule.arrived(t, opts.paced ?? false)
      if (opts.joined ?? true) rule.joined(t)
      if (held === undefined && rule.holds(t, pace)) held = t - from
    }
  }
  return held
}

describe('the step rule', () => {
  it('holds within about three spans of a step to 3x the pace, and never at 1.2x', () => {
    const at3x = play(new StepRule(), 10, 3, 10_000, 1000)
    expect(at3x).toBeDefined()
    expect(at3x!).toBeLessThanOrEqual(160)
    expect(play(new StepRule(), 10, 1.2, 10_000, 3000)).toBeUndefined()
  })

  it('takes no clump for a step: 2.4x the pace for one span, then the pace', () => {
    const rule = new StepRule()
    expect(play(rule, 10, 2.4, 10_000, 50)).toBeUndefined()
    expect(play(rule, 10, 1, 10_050, 1000)).toBeUndefined()
  })

  it('leaves out paced arrivals that the ends keep up with, however fast they come', () => {
    // 3x the pace in arrivals, all paced and let in, and as many ends: nothing outruns the thread.
    const rule = new StepRule()
    let held = false
    for (let t = 10_000; t < 11_000; t += 1) {
      for (let k = 0; k < 3; k++) { rule.arrived(t, true); rule.joined(t); rule.ended(t) }
      held ||= rule.holds(t, 3.3)
    }
    expect(held).toBe(false)
  })

  it('sees a queue that grows in every span (paced arrivals let in faster than renders end)', () => {
    expect(play(new StepRule(), 10, 3, 10_000, 1000, { paced: true })).toBeDefined()
    // Arrivals refused with a 503 never join the queue.
    expect(play(new StepRule(), 10, 3, 10_000, 1000, { paced: true, joined: false })).toBeUndefined()
  })

  it('never holds before the pace is measured', () => {
    const rule = new StepRule()
    for (let t = 0; t < 500; t++) for (let k = 0; k < 10; k++) { rule.arrived(t, false); rule.joined(t) }
    expect(rule.holds(499, 0)).toBe(false)
    expect(rule.holds(499, 5)).toBe(true)
  })
})

describe('the demand window', () => {
  const BUDGET = 1000

  it('climbs when the window asks for more than 1.25 budgets and the queue overflowed in three of the last four slots', () => {
    const w = new DemandWindow(BUDGET)
    // 300 arrivals over the window at a drain of 5 ms: 1.5 budgets of work.
    for (let t = 0; t < 1000; t += 10) for (let k = 0; k < 3; k++) w.arrived(t, false, false)
    // Refused in the last two slots only: one overflow that drains, not a climb.
    w.refused(800)
    w.refused(900)
    w.read(999, 5)
    expect(w.climb).toBe(false)
    w.refused(700)
    w.read(999, 5)
    expect(w.climb).toBe(true)
    // The same arrivals at a drain of 4 ms ask for 1.2 budgets: within the bound.
    w.read(999, 4)
    expect(w.climb).toBe(false)
  })

  it('leaves first requests on a connection out of the demand, but not out of the arrivals it reports', () => {
    const w = new DemandWindow(BUDGET)
    for (let t = 0; t < 1000; t += 10) for (let k = 0; k < 3; k++) w.arrived(t, true, false)
    for (const t of [700, 800, 900]) w.refused(t)
    w.read(999, 5)
    expect(w.climb).toBe(false)
    expect(w.all).toBe(300)
    // This slot and the one before (125 ms each): the arrivals from 750 ms on.
    expect(w.lately).toBe(75)
    expect(w.latelyMs).toBeCloseTo(999 - 750)
  })

  it('starts a retry storm when most of 50 or more arrivals are immediate retries, and ends it once they stop', () => {
    const w = new DemandWindow(BUDGET)
    for (let t = 0; t < 100; t++) w.arrived(t, false, t % 4 !== 0)
    w.read(100, 5)
    expect(w.storm(false, 10)).toBe(true)
    // 49 retries are too few to say anything.
    const few = new DemandWindow(BUDGET)
    for (let t = 0; t < 49; t++) few.arrived(t, false, true)
    few.read(100, 5)
    expect(few.storm(false, 10)).toBe(false)
    // A second later: refusals go on, but under one arrival in ten is a retry.
    for (let t = 1100; t < 1900; t++) { w.arrived(t, false, t % 20 === 0); w.refused(t) }
    w.read(1900, 5)
    expect(w.storm(true, 10)).toBe(false)
    // Nothing refused while renders still wait: the storm holds.
    const waiting = new DemandWindow(BUDGET)
    for (let t = 0; t < 100; t++) waiting.arrived(t, false, t % 4 !== 0)
    waiting.read(1000, 5)
    for (let t = 1100; t < 1900; t += 4) waiting.arrived(t, false, false)
    waiting.read(1900, 5)
    expect(waiting.storm(true, 3)).toBe(true)
    expect(waiting.storm(true, 0)).toBe(false)
  })
})

describe('the pace meter', () => {
  it('measures nothing from the first warm renders, then the drain between ends and the busy time per render', () => {
    const m = new PaceMeter(4)
    m.startedWork(0)
    let t = 0
    for (let i = 1; i <= 4; i++) m.ended(t += 50, 50, 1, 0, t * 0.8)
    expect([m.drain, m.pace]).toEqual([0, 0])
    // Renders end every 10 ms with 8 ms of busy time each.
    for (let i = 0; i < 40; i++) m.ended(t += 10, 10, 1, 0, 200 + 8 * i)
    expect(m.drain).toBeCloseTo(10, 0)
    expect(m.pace).toBeCloseTo(8, 5)
  })

  it('paces by the drain where the host reads no busy time, and only while the thread works flat out', () => {
    const m = new PaceMeter(0)
    m.startedWork(0)
    let t = 0
    // Lone renders with idle spells between: drain measured, no pace.
    for (let i = 0; i < 10; i++) { t += 30; m.ended(t, 5, 0, 0, NaN); m.startedWork(t += 20) }
    expect(m.drain).toBeGreaterThan(0)
    expect(m.pace).toBe(0)
    // Renders waiting at every end: the pace follows the gaps.
    for (let i = 0; i < 40; i++) m.ended(t += 6, 6, 2, 0, NaN)
    expect(m.pace).toBeCloseTo(6, 1)
  })

  it('leaves streams out: a render that ran LONG_LIVED ms or more says nothing of the drain', () => {
    const m = new PaceMeter(0)
    m.startedWork(0)
    m.ended(20_000, LONG_LIVED, 0, 0, NaN)
    expect(m.drain).toBe(0)
    m.ended(20_010, 10, 0, 0, NaN)
    expect(m.drain).toBe(10)
  })

  it('measures the drain on the work clock where the host has one', () => {
    let work = 0
    const m = new PaceMeter(0, () => work)
    m.startedWork(0)
    // Ten renders that waited on I/O side by side end together after 1.5 s of wall time, in 20 ms of work.
    work = 20
    for (let i = 0; i < 10; i++) m.ended(1500, 1500, 0, 9 - i, NaN)
    expect(m.drain).toBeLessThan(21)
  })
})
