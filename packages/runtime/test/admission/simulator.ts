// A worker thread on a fake clock, for the admission controller's scenarios: renders that
// need `service` ms of CPU each, sharing one CPU (k renders running each advance at 1/k), a
// FIFO queue, and the controller deciding every arrival. The render-queue host's rules are
// played here: two run at once, one while shedding outside a storm.
import { AdmissionController, type AdmissionParams, type AdmissionState } from '../../src/admission/controller.ts'

export interface Outcome {
  arrived: number
  /** When it started (served) or was shed; undefined while it waits. */
  decidedAt?: number
  endedAt?: number
  verdict?: 'served' | 'backlog' | 'overload'
}

interface Running { outcome: Outcome, left: number, startedAt: number }

export class SimWorker {
  now = 0
  readonly controller: AdmissionController
  readonly service: () => number
  readonly queue: Outcome[] = []
  readonly running: Running[] = []
  readonly outcomes: Outcome[] = []
  readonly states: Array<{ at: number, state: AdmissionState }> = []
  busyMs = 0
  /** Called when a render ends or is shed (closed-loop clients send again from here). */
  onAnswer: (o: Outcome) => void = () => {}

  constructor (service: number | (() => number), params: AdmissionParams = { budget: 1000, target: 10 }) {
    this.service = typeof service === 'number' ? () => service : service
    this.controller = new AdmissionController(params, () => this.now)
  }

  #capacity (): number {
    return this.controller.oneAtATime ? 1 : 2
  }

  /**
   * `fresh`: the first request on its connection; `retry`: one right after its connection's
   * 503; `paced`: one right after its connection's last answer (see AdmissionController#arrive).
   */
  arrive (fresh = false, retry = false, paced = false): Outcome {
    const o: Outcome = { arrived: this.now }
    this.outcomes.push(o)
    const verdict = this.controller.arrive(this.now, this.queue.length, this.running.length, this.#capacity(), fresh, retry, paced)
    this.#note()
    for (let cut = this.controller.excess(this.queue.length); cut > 0; cut--) {
      const w = this.queue.shift()!
      w.verdict = 'overload'
      w.decidedAt = this.now
      this.onAnswer(w)
    }
    if (verdict !== 'admit') {
      o.verdict = verdict
      o.decidedAt = this.now
      this.onAnswer(o)
      return o
    }
    this.queue.push(o)
    this.#startWhatFits()
    return o
  }

  /**
   * Advances the clock by `ms` in steps of `step`, with `arrivals(t)` renders arriving in each
   * step (an arrivals function may also call arrive() itself and return 0).
   */
  run (ms: number, arrivals: (t: number) => number = () => 0, step = 0.1): void {
    const end = this.now + ms
    while (this.now < end - 1e-9) {
      for (let n = arrivals(this.now); n > 0; n--) this.arrive()
      const k = this.running.length
      if (k > 0) {
        this.busyMs += step
        for (const r of this.running) r.left -= step / k
        const done = this.running.filter((r) => r.left <= 1e-9)
        this.now += step
        for (const r of done) {
          this.running.splice(this.running.indexOf(r), 1)
          r.outcome.endedAt = this.now
          r.outcome.verdict = 'served'
          this.controller.finished(this.now, this.now - r.startedAt, this.queue.length, this.busyMs)
          this.onAnswer(r.outcome)
        }
        if (done.length > 0) this.#startWhatFits()
      } else {
        this.now += step
      }
    }
  }

  #startWhatFits (): void {
    while (this.queue.length > 0 && this.running.length < this.#capacity()) {
      const o = this.queue.shift()!
      o.decidedAt = this.now
      this.running.push({ outcome: o, left: this.service(), startedAt: this.now })
      this.controller.started(this.now, this.now - o.arrived)
    }
    if (this.queue.length === 0) this.controller.stateNow(0)
    this.#note()
  }

  #note (): void {
    const state = this.controller.state
    if (this.states.at(-1)?.state !== state) this.states.push({ at: this.now, state })
  }

  /** Renders that ended in [from, to). */
  served (from = 0, to = Infinity): Outcome[] {
    return this.outcomes.filter((o) => o.verdict === 'served' && o.endedAt! >= from && o.endedAt! < to)
  }

  /** Renders that arrived in [from, to) and were shed. */
  shed (from = 0, to = Infinity): Outcome[] {
    return this.outcomes.filter((o) => (o.verdict === 'backlog' || o.verdict === 'overload') && o.arrived >= from && o.arrived < to)
  }

  visited (): AdmissionState[] { return [...new Set(this.states.map((s) => s.state))] }
}

/** Arrivals at a steady `perSecond`, spread evenly over time (fractional ones carried over). */
export function steady (perSecond: number, step = 0.1): () => number {
  let owed = 0
  return () => {
    owed += perSecond * step / 1000
    const n = Math.floor(owed)
    owed -= n
    return n
  }
}

/**
 * Random arrivals at `perSecond` on average (a Poisson process, as independent users make),
 * from a seeded generator so that a scenario plays the same every time.
 */
export function poisson (perSecond: number, seed: number, step = 0.1): () => number {
  let state = seed >>> 0
  const p = perSecond * step / 1000
  return () => {
    // xorshift32
    state ^= state << 13; state >>>= 0
    state ^= state >>> 17
    state ^= state << 5; state >>>= 0
    return state / 4294967296 < p ? 1 : 0
  }
}

export function percentile (values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0
}
