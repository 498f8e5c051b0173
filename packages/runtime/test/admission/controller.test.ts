import { describe, expect, it } from 'vitest'
import { AdmissionController } from '../../src/admission/controller.ts'
import { percentile, poisson, SimWorker, steady } from './simulator.ts'

// Renders of 5 ms of CPU: a thread serves 200 a second.
const S = 5
const CAPACITY = 1000 / S

describe('admission controller (fake clock)', () => {
  it('steady load at 0.8x capacity: nothing is shed, the thread never leaves normal and queueing', () => {
    const w = new SimWorker(S)
    w.run(5000, steady(0.8 * CAPACITY))
    expect(w.shed()).toHaveLength(0)
    expect(w.served().length).toBeGreaterThan(0.8 * CAPACITY * 4.9)
    expect(w.visited().every((s) => s === 'normal' || s === 'queueing')).toBe(true)
  })

  it('a burst that drains within the budget is queued, not shed, and the thread is normal again after', () => {
    const w = new SimWorker(S)
    w.run(2000, steady(0.3 * CAPACITY)) // warm: the drain rate is known
    let burst = true
    // 150 renders at once: 750 ms of work, within the 1000 ms budget.
    w.run(2000, () => { if (!burst) return 0; burst = false; return 150 })
    w.controller.stateNow(0)
    expect(w.shed()).toHaveLength(0)
    expect(w.visited()).toContain('queueing')
    expect(w.controller.state).toBe('normal')
    // A rate-limited client's burst each second at half capacity, as autocannon -R sends it.
    const b = new SimWorker(S)
    b.run(1000, steady(0.3 * CAPACITY))
    b.run(6000, (t) => (Math.abs(t % 1000) < 0.05 ? CAPACITY / 2 : 0))
    expect(b.shed()).toHaveLength(0)
    expect(b.visited()).not.toContain('shedding')
  })

  it('warmRenders: nothing is measured from the cold renders a host names, so a burst just after them is queued, not shed', () => {
    // The first 20 renders take ten times as long (a thread's JIT and caches are cold); then
    // a burst of 100 comes at once: 500 ms of warm work, within the 1000 ms budget (the few
    // renders after the 20th that are cold too make it a little more).
    const scenario = (params?: { budget: number, target: number, warmRenders: number }) => {
      let renders = 0
      const w = new SimWorker(() => (++renders <= 20 ? 10 * S : S), params)
      // 15 a second, each on its own: 20-22 renders, fewer than 32.
      w.run(1450, steady(15))
      expect(renders).toBeGreaterThanOrEqual(20)
      expect(renders).toBeLessThan(32)
      let burst = true
      w.run(2000, () => { if (!burst) return 0; burst = false; return 100 })
      return w
    }
    // With the default 4, the drain is measured on the cold renders: the burst looks like 5 s of work.
    expect(scenario().shed().length).toBeGreaterThan(0)
    // A host whose first 20 renders are cold says so: the burst is queued and served in time.
    const warm = scenario({ budget: 1000, target: 10, warmRenders: 32 })
    expect(warm.shed()).toHaveLength(0)
    expect(Math.max(...warm.served().map((o) => o.endedAt! - o.arrived))).toBeLessThan(1000)
  })

  it('refuses a warmRenders that is not a whole number from 0', () => {
    expect(() => new AdmissionController({ budget: 1000, target: 10, warmRenders: -1 })).toThrow(RangeError)
    expect(() => new AdmissionController({ budget: 1000, target: 10, warmRenders: 1.5 })).toThrow(RangeError)
  })

  it('a rate-limited client at half capacity (autocannon -R): each connection sends its second\'s quota back to back from the top of the second; nothing is shed', () => {
    const w = new SimWorker(S)
    w.run(1000, steady(0.3 * CAPACITY))
    // 25 connections, 4 requests each per second: 100 a second, half of capacity.
    const connections = 25
    const quota = 4
    const left = new Array<number>(connections).fill(0)
    const pending: number[] = []
    const owner = new Map<object, number>()
    w.onAnswer = (o) => {
      const c = owner.get(o)!
      if (left[c]! > 0) { left[c]!--; pending.push(c) }
    }
    let second = -1
    w.run(8000, (t) => {
      if (Math.floor(t / 1000) !== second) {
        second = Math.floor(t / 1000)
        for (let c = 0; c < connections; c++) { left[c] = quota - 1; pending.push(c) }
      }
      while (pending.length > 0) owner.set(w.arrive(), pending.shift()!)
      return 0
    })
    expect(w.shed()).toHaveLength(0)
    expect(w.visited()).not.toContain('shedding')
    expect(w.served().length).toBeGreaterThan(7 * 100)
  })

  it('clients paced in step at half capacity (every connection sends at the same instants): nothing is shed', () => {
    const w = new SimWorker(S)
    w.run(1000, steady(0.3 * CAPACITY))
    // 25 connections, each sending every 250 ms at the same instants: 100 a second.
    w.run(6000, (t) => (Math.abs(t % 250) < 0.05 ? 25 : 0))
    expect(w.shed()).toHaveLength(0)
    expect(w.visited()).not.toContain('shedding')
  })

  it('a load that moves here (another worker drains, its clients reconnect) is not taken for an overload', () => {
    const w = new SimWorker(S)
    // 10 closed-loop clients keep this worker at a quarter of its capacity (each waits 190 ms
    // between requests); 10 more arrive, and it is at half.
    const next: number[] = []
    const owner = new Map<object, number>()
    let clients = 10
    const send = (c: number, fresh: boolean): void => { owner.set(w.arrive(fresh), c) }
    w.onAnswer = () => { next.push(w.now + 190) }
    for (let c = 0; c < clients; c++) send(c, true)
    w.run(3000, (t) => {
      for (let i = next.length - 1; i >= 0; i--) if (next[i]! <= t) { next.splice(i, 1); send(0, false) }
      return 0
    })
    // 10 more clients arrive within 50 ms on new connections, and stay.
    w.run(2000, (t) => {
      if (clients < 20 && Math.random() < 0.02) send(clients++, true)
      for (let i = next.length - 1; i >= 0; i--) if (next[i]! <= t) { next.splice(i, 1); send(0, false) }
      return 0
    })
    expect(clients).toBe(20)
    expect(w.shed()).toHaveLength(0)
    expect(w.visited()).not.toContain('shedding')
  })

  it('a client opening its connections at half capacity, its first requests at twice the pace for 150 ms: nothing is shed', () => {
    for (const service of [S, 13]) {
      const capacity = 1000 / service
      const w = new SimWorker(service)
      w.run(2000, steady(0.5 * capacity))
      // Three spans of first requests at 2x (autocannon's 50 connections, at their steepest on
      // a busy 2-core machine), then half of capacity again.
      w.run(150, steady(2 * capacity))
      w.run(3000, steady(0.5 * capacity))
      expect(w.shed()).toHaveLength(0)
      expect(w.visited()).not.toContain('shedding')
    }
  })

  it('a rate-limited client at half capacity starting from idle: its connections open over 150 ms, each sends at once and again as its answer arrives; nothing is shed', () => {
    for (const service of [S, 13]) {
      const capacity = 1000 / service
      const w = new SimWorker(service)
      w.run(2000, steady(0.5 * capacity))
      w.run(1000)
      // autocannon -R at half of capacity with 50 connections, 25 of them here: each second's
      // requests go out as fast as the connections allow. In the first second every connection
      // sends its first request as it opens (25 over 150 ms on a busy 2-core machine), and the
      // rest of the second's share on answers as they arrive.
      const connections = 25
      const perSecond = Math.round(0.5 * capacity)
      const start = w.now
      let opened = 0
      let sent = 0
      let second = 0
      const idle: number[] = []
      const owner = new Map<object, number>()
      const send = (c: number, fresh: boolean, paced: boolean): void => { sent++; owner.set(w.arrive(fresh, false, paced), c) }
      w.onAnswer = (o) => {
        const c = owner.get(o)!
        if (sent < perSecond) send(c, false, true)
        else idle.push(c)
      }
      w.run(5000, (t) => {
        while (opened < connections && t - start >= (opened * 150) / connections) send(opened++, true, false)
        if (Math.floor((t - start) / 1000) !== second) {
          second = Math.floor((t - start) / 1000)
          sent = 0
          while (idle.length > 0 && sent < perSecond) send(idle.shift()!, false, false)
        }
        return 0
      })
      expect(w.shed()).toHaveLength(0)
      expect(w.visited()).not.toContain('shedding')
    }
  })

  it('a burst beyond the budget: the renders that would wait past it are shed with backlog, the rest served within it', () => {
    const w = new SimWorker(S)
    w.run(1000, steady(0.3 * CAPACITY))
    const from = w.now
    let burst = true
    w.run(4000, () => { if (!burst) return 0; burst = false; return 400 }) // 2 s of work
    const shed = w.shed(from)
    expect(shed.length).toBeGreaterThan(150)
    expect(shed.every((o) => o.verdict === 'backlog')).toBe(true)
    const waits = w.served(from).map((o) => o.decidedAt! - o.arrived)
    expect(Math.max(...waits)).toBeLessThan(1100)
  })

  it('while the process restarts a worker, a burst that takes up to twice the budget is queued whole; an overload is still shed', () => {
    // The burst of the test above, 1.6 s of work: shed in part normally, served whole during a restart.
    const burst = (restarting: boolean): SimWorker => {
      const w = new SimWorker(S)
      w.run(1000, steady(0.3 * CAPACITY))
      w.controller.restarting = restarting
      let once = true
      w.run(4000, () => { if (!once) return 0; once = false; return 320 })
      return w
    }
    expect(burst(false).shed().length).toBeGreaterThan(100)
    const restarting = burst(true)
    expect(restarting.controller.restarting).toBe(true)
    expect(restarting.shed()).toHaveLength(0)
    const waits = restarting.served().map((o) => o.decidedAt! - o.arrived)
    expect(Math.max(...waits)).toBeGreaterThan(1000)
    expect(Math.max(...waits)).toBeLessThan(2000)
    // A step to 3x during a restart: seen and shed with the tight bound as at any time.
    const w = new SimWorker(S)
    w.run(1000, steady(0.5 * CAPACITY))
    w.controller.restarting = true
    const from = w.now
    w.run(3000, steady(3 * CAPACITY))
    expect(w.visited()).toContain('shedding')
    const shed = w.shed(from)
    expect(shed.length).toBeGreaterThan(1000) // of 1,800 arrivals; about 600 can be served
    expect(shed.filter((o) => o.verdict === 'overload').length).toBeGreaterThan(0.9 * shed.length)
  })

  it('slow renders: a lone render slower than the budget is never shed, and one may always wait', () => {
    const w = new SimWorker(1500)
    w.arrive()
    w.run(20_000, (t) => (Math.abs(t % 4000 - 2000) < 0.05 ? 1 : 0))
    expect(w.shed()).toHaveLength(0)
    expect(w.served().length).toBeGreaterThan(5)
  })

  it('a step from half of capacity to 3x is seen within 160 ms: every 503 of the onset leaves within 100 ms of its arrival, and the pages served through it within 100 ms', () => {
    for (const service of [S, 13]) {
      const capacity = 1000 / service
      const w = new SimWorker(service)
      w.run(2000, steady(0.5 * capacity))
      const onset = w.now
      w.run(5000, steady(3 * capacity))
      const entered = w.states.find((s) => s.state === 'shedding' && s.at >= onset)
      expect(entered).toBeDefined()
      // Three spans of 50 ms at 3x: a steep step (four spans at 1.5x and more took 172 ms).
      expect(entered!.at - onset).toBeLessThan(160)
      // The renders queued before the step was seen are cut oldest first, so the slowest 503 is
      // one that waited until then.
      const shed = w.shed(onset)
      expect(Math.max(...shed.map((o) => o.decidedAt! - o.arrived))).toBeLessThan(100)
      const served = w.served(onset)
      expect(percentile(served.map((o) => o.endedAt! - o.arrived), 0.99)).toBeLessThan(100)
      expect(w.states.filter((s) => s.state === 'shedding')).toHaveLength(1)
    }
  })

  it('a step to 3x whose arrivals mostly come on connections answered moments before (a generator reusing its connections) is seen within 160 ms, by the queue\'s growth', () => {
    for (const service of [S, 13]) {
      const capacity = 1000 / service
      const w = new SimWorker(service)
      w.run(2000, steady(0.5 * capacity))
      const onset = w.now
      // Two arrivals in three look paced to the worker: the step rule counts 1x the pace.
      let n = 0
      const load = steady(3 * capacity)
      w.run(3000, () => {
        const due = load()
        for (let i = 0; i < due; i++) w.arrive(false, false, n++ % 3 !== 0)
        return 0
      })
      const entered = w.states.find((s) => s.state === 'shedding' && s.at >= onset)
      expect(entered).toBeDefined()
      expect(entered!.at - onset).toBeLessThan(160)
      expect(Math.max(...w.shed(onset).map((o) => o.decidedAt! - o.arrived))).toBeLessThan(100)
    }
  })

  it('closed-loop clients, as many as the budget holds, each asking again as its answer arrives (paced): the queue never grows, nothing is shed', () => {
    for (const service of [S, 13]) {
      const w = new SimWorker(service)
      w.run(1000, steady(0.3 * 1000 / service))
      // 50 of them (their queue, 50 renders, fits the budget) connect at once, then each asks
      // again as its answer arrives.
      let answered = 0
      w.onAnswer = () => { answered++ }
      for (let c = 0; c < 50; c++) w.arrive(true)
      w.run(5000, () => {
        const n = answered
        answered = 0
        for (let i = 0; i < n; i++) w.arrive(false, false, true)
        return 0
      })
      expect(w.shed()).toHaveLength(0)
      expect(w.visited()).not.toContain('shedding')
      expect(w.served().length).toBeGreaterThan(4 * 1000 / service)
    }
  })

  it('random (Poisson) arrivals at 0.8x of capacity for two minutes: nothing is shed, on fast or slow renders', () => {
    for (const service of [S, 13]) {
      const w = new SimWorker(service)
      w.run(1000, steady(0.5 * 1000 / service))
      w.run(120_000, poisson(0.8 * 1000 / service, 42))
      expect(w.shed()).toHaveLength(0)
      expect(w.visited()).not.toContain('shedding')
    }
  })

  it('sustained 3x overload: shedding within a second, goodput near capacity, served renders fast, 503s at once', () => {
    const w = new SimWorker(S)
    w.run(2000, steady(0.5 * CAPACITY))
    const onset = w.now
    w.run(10_000, steady(3 * CAPACITY))
    const entered = w.states.find((s) => s.state === 'shedding')
    expect(entered).toBeDefined()
    expect(entered!.at - onset).toBeLessThan(1000)
    const settled = onset + 2500
    const served = w.served(settled, w.now - 100)
    // Goodput: at least 95 % of what the thread can do.
    expect(served.length).toBeGreaterThan(0.95 * CAPACITY * (w.now - 100 - settled) / 1000)
    // Served renders: two run side by side (2 S each) after a wait within target.
    const latency = served.map((o) => o.endedAt! - o.arrived)
    expect(percentile(latency, 0.99)).toBeLessThan(4 * S)
    const shed = w.shed(settled)
    expect(shed.length).toBeGreaterThan(served.length)
    expect(shed.every((o) => o.decidedAt === o.arrived)).toBe(true)
    expect(w.controller.storm).toBe(false)
  })

  it('a 3x overload whose arrivals stall for 200 ms and then come at once (a client that was descheduled): the thread stays tight, no 503 waits', () => {
    const w = new SimWorker(S)
    w.run(2000, steady(0.5 * CAPACITY))
    w.run(3000, steady(3 * CAPACITY))
    expect(w.controller.state).toBe('shedding')
    w.run(200)
    const resumed = w.now
    // The 200 ms of requests the client owed, sent in one go, then 3x again.
    for (let i = 0; i < 0.2 * 3 * CAPACITY; i++) w.arrive()
    w.run(2000, steady(3 * CAPACITY))
    const shed = w.shed(resumed)
    expect(shed.length).toBeGreaterThan(0)
    expect(Math.max(...shed.map((o) => o.decidedAt! - o.arrived))).toBeLessThan(4 * S)
    const served = w.served(resumed)
    expect(percentile(served.map((o) => o.endedAt! - o.arrived), 0.99)).toBeLessThan(4 * S)
  })

  it('after a 3x overload stops at once, the bound stays tight while the window still holds it, and the thread is normal within the budget', () => {
    const w = new SimWorker(S)
    w.run(2000, steady(0.5 * CAPACITY))
    w.run(3000, steady(3 * CAPACITY))
    expect(w.controller.state).toBe('shedding')
    const stopped = w.now
    w.run(300)
    expect(w.controller.stateNow(0)).toBe('recovering')
    // A burst now finds the tight bound: what cannot start within `target` is shed at once.
    const burst = Array.from({ length: 20 }, () => w.arrive())
    expect(burst.filter((o) => o.verdict === 'overload').length).toBeGreaterThan(10)
    expect(burst.every((o) => o.verdict !== 'overload' || o.decidedAt === o.arrived)).toBe(true)
    w.run(1000 - (w.now - stopped))
    expect(w.controller.stateNow(0)).toBe('normal')
  })

  it('an immediate-retry storm: the bound returns to the budget, throughput stays at capacity', () => {
    const w = new SimWorker(S)
    w.run(1000, steady(0.3 * CAPACITY))
    // 400 clients that ask again the moment any answer arrives (2 s of work: more than the
    // budget queues); a held 503 comes 250 ms later.
    // A 503 is followed on its connection by an immediate retry (the host marks it so).
    const clients = 400
    w.onAnswer = (o) => {
      const shed = o.verdict !== 'served'
      pending.push({ at: w.now + (shed && w.controller.storm ? 250 : 0), retry: shed })
    }
    const pending = Array.from({ length: clients }, () => ({ at: w.now, retry: false }))
    const from = w.now
    w.run(8000, (t) => {
      for (let i = pending.length - 1; i >= 0; i--) {
        const p = pending[i]!
        if (p.at <= t) { pending.splice(i, 1); w.arrive(false, p.retry) }
      }
      return 0
    })
    expect(w.controller.storm).toBe(true)
    const last = w.now - 2000
    expect(w.served(last).length).toBeGreaterThan(0.97 * CAPACITY * 2 * 0.98)
    // With the storm seen, only the clients beyond the budget are shed, each once per hold.
    expect(w.shed(last).length).toBeLessThan((clients - 1000 / S) * 2 * 1000 / 250 * 1.1)
    expect(w.busyMs / (w.now - from)).toBeGreaterThan(0.97)
  })

  it('open-loop overload on renders four times slower than usual (503s outnumber ends tenfold) is shed tightly, not taken for a retry storm', () => {
    // The onset of 3x on a busy machine: each render takes 4 S, so 3x of the usual capacity
    // is 12x of this thread's; no client's request follows its own 503.
    const w = new SimWorker(4 * S)
    w.run(2000, steady(0.5 * CAPACITY / 4))
    const onset = w.now
    w.run(8000, steady(3 * CAPACITY))
    const settled = onset + 2500
    const served = w.served(settled, w.now - 100)
    expect(w.shed(settled).length).toBeGreaterThan(10 * served.length)
    expect(w.controller.storm).toBe(false)
    // Served renders wait within target, not the budget.
    expect(percentile(served.map((o) => o.decidedAt! - o.arrived), 0.99)).toBeLessThan(2 * 4 * S)
  })

  it('a storm ends when the clients stop retrying at once: then the bound is tight again', () => {
    const w = new SimWorker(S)
    w.run(1000, steady(0.3 * CAPACITY))
    const pending: Array<{ at: number, retry: boolean }> = Array.from({ length: 400 }, () => ({ at: w.now, retry: false }))
    let closed = true
    w.onAnswer = (o) => {
      if (!closed) return
      const shed = o.verdict !== 'served'
      pending.push({ at: w.now + (shed && w.controller.storm ? 250 : 0), retry: shed })
    }
    const replay = (t: number): number => {
      for (let i = pending.length - 1; i >= 0; i--) {
        const p = pending[i]!
        if (p.at <= t) { pending.splice(i, 1); w.arrive(false, p.retry) }
      }
      return 0
    }
    w.run(4000, replay)
    expect(w.controller.storm).toBe(true)
    // The clients turn into an open load at 3x: no request follows its own 503 any more.
    closed = false
    pending.length = 0
    const open = steady(3 * CAPACITY)
    w.run(4000, open)
    expect(w.controller.storm).toBe(false)
    expect(w.controller.state).toBe('shedding')
    const served = w.served(w.now - 1500, w.now - 100)
    expect(percentile(served.map((o) => o.decidedAt! - o.arrived), 0.99)).toBeLessThan(4 * S)
  })

  it('recovery: after the overload ends the thread passes through recovering to normal and sheds nothing more', () => {
    const w = new SimWorker(S)
    w.run(1000, steady(0.5 * CAPACITY))
    w.run(3000, steady(2 * CAPACITY))
    expect(w.controller.state === 'shedding' || w.controller.state === 'recovering').toBe(true)
    const calm = w.now
    w.run(4000, steady(0.5 * CAPACITY))
    expect(w.visited()).toEqual(expect.arrayContaining(['shedding', 'normal']))
    expect(w.shed(calm + 1200)).toHaveLength(0)
    expect(w.controller.state === 'normal' || w.controller.state === 'queueing').toBe(true)
    expect(w.controller.storm).toBe(false)
  })

  it('one hot worker: of two workers sharing 1.8x one worker\'s capacity unevenly (1.5x and 0.3x), only the hot one sheds', () => {
    const hot = new SimWorker(S)
    const cool = new SimWorker(S)
    const warm = steady(0.3 * CAPACITY)
    const rateHot = steady(1.5 * CAPACITY)
    const rateCool = steady(0.3 * CAPACITY * 1)
    hot.run(1000, warm)
    cool.run(1000, steady(0.3 * CAPACITY))
    hot.run(5000, rateHot)
    cool.run(5000, rateCool)
    expect(hot.shed().length).toBeGreaterThan(0)
    expect(hot.visited()).toContain('shedding')
    expect(cool.shed()).toHaveLength(0)
    expect(cool.visited()).not.toContain('shedding')
  })

  it('measures the pace from the busy time a host reads at some ends only', () => {
    // Renders of 0.5 ms of busy time ending every 0.6 ms; the host reads the busy time at
    // every tenth end (as the render queue reads it at most every few ms).
    const c = new AdmissionController({ budget: 1000, target: 10 })
    let busy = 0
    for (let i = 0; i < 400; i++) {
      const now = i * 0.6
      c.started(now, 0)
      busy += 0.5
      c.finished(now + 0.5, 0.5, 0, i % 10 === 0 ? busy : NaN)
    }
    expect(c.pace).toBeCloseTo(0.5, 5)
    // A host that reads no busy time (the render pool): the pace is the time between ends
    // while renders waited.
    const pool = new AdmissionController({ budget: 1000, target: 10 })
    for (let i = 0; i < 40; i++) { pool.started(i * 2, 0); pool.finished(i * 2 + 2, 2, 3) }
    expect(pool.pace).toBeCloseTo(2, 5)
  })

  it('measures the drain on the work clock: renders that wait on I/O side by side do not look slow', () => {
    // Bursts of six renders that each wait 1500 ms on a timer and work 0.3 ms, two seconds
    // apart; then a burst of twenty finds two running and asks for the rest to wait.
    const verdicts = (withWorkClock: boolean): string[] => {
      let now = 0
      let work = 0
      const c = new AdmissionController({ budget: 1000, target: 10 }, () => now, withWorkClock ? () => work : undefined)
      for (let burst = 0; burst < 4; burst++) {
        now = burst * 2000
        for (let i = 0; i < 6; i++) { c.arrive(now, 0, i, 100); c.started(now, 0) }
        now += 1500
        for (let i = 0; i < 6; i++) { now += 0.5; work += 0.3; c.finished(now, 1500, 0, NaN) }
      }
      now = 8000
      return Array.from({ length: 20 }, (_, i) => c.arrive(now, Math.max(0, i - 2), Math.min(i, 2), 2))
    }
    expect(verdicts(true).filter((v) => v !== 'admit')).toEqual([])
    // On the wall clock the 1.5 s before each burst's first end counts as one render's time.
    expect(verdicts(false).filter((v) => v === 'backlog').length).toBeGreaterThan(0)
  })

  it('has its parameters checked', () => {
    expect(() => new AdmissionController({ budget: 0, target: 0 })).toThrow('budget')
    expect(() => new AdmissionController({ budget: 100, target: 100 })).toThrow('target')
    const c = new AdmissionController({ budget: 100, target: 0 })
    expect(c.arrive(0, 0, 0, 2)).toBe('admit')
    expect(c.state).toBe('normal')
  })
})
