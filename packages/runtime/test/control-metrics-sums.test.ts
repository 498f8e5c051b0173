import { describe, expect, it } from 'vitest'
import { EventEmitter } from 'node:events'
import fc from 'fast-check'
import { ControlMetrics } from '../src/metrics/control-metrics.ts'
import type { MetricSnapshot } from '../src/protocol.ts'
import type { Supervisor } from '../src/supervisor.ts'

// The summed histogram's _sum is a counter to Prometheus: it must never read lower, also
// when a worker exits and its figures move from the live ones into its slot's retired total.
// The supervisor here only hands ControlMetrics the workers' figures, as the real one does.

const SERIES = 'spindle_http_request_duration_seconds'

function snapshot (sum: number, count: number): MetricSnapshot[] {
  return [{
    name: SERIES,
    help: 'Request duration',
    type: 'histogram',
    bounds: [1],
    series: [{ labels: { route: '/', status_class: '2xx' }, buckets: [0], sum, count }],
  }]
}

interface Live { id: number, generation: number, metrics: MetricSnapshot[] }

class Figures extends EventEmitter {
  live: Live[] = []
  async workerMetrics () {
    return this.live.map((w) => ({ id: w.id, generation: w.generation, current: true, metrics: w.metrics, latest: w.metrics }))
  }

  status () { return [] }
  isReady () { return true }
  readyWorkers () { return this.live.length }
}

/** The value of `series` with exactly these labels (0 when absent). */
const read = (text: string, series: string, labels = 'route="/",status_class="2xx"'): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${series}{`) && l.slice(series.length + 1, l.lastIndexOf('}')).split(',').sort().join(',') === labels.split(',').sort().join(','))
  return line === undefined ? 0 : Number(line.split(' ').at(-1))
}
const WORKER_SUM = 'spindle_worker_http_request_duration_seconds_sum'
const perWorker = (text: string): number[] => [1, 2].map((w) => read(text, WORKER_SUM, `route="/",status_class="2xx",worker="${w}"`))

describe('ControlMetrics: summed histogram sums', () => {
  it('never go back when workers exit, whatever the order of their figures', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.double({ min: 0, max: 5, noNaN: true }), { minLength: 3, maxLength: 6 }),
      async (sums) => {
        const figures = new Figures()
        const metrics = new ControlMetrics(figures as unknown as Supervisor)
        // Workers 1/1, 1/2, 2/1, 2/2, … each with its own total; they exit one by one.
        figures.live = sums.map((sum, i) => ({ id: (i % 2) + 1, generation: Math.floor(i / 2) + 1, metrics: snapshot(sum, 1) }))
        const first = await metrics.text()
        let last = read(first, `${SERIES}_sum`)
        let lastWorkers = perWorker(first)
        while (figures.live.length > 0) {
          const gone = figures.live.shift()!
          figures.emit('worker-metrics-final', { id: gone.id, generation: gone.generation, metrics: gone.metrics })
          const text = await metrics.text()
          const now = read(text, `${SERIES}_sum`)
          expect(now).toBeGreaterThanOrEqual(last)
          expect(read(text, `${SERIES}_count`)).toBe(sums.length)
          last = now
          const workers = perWorker(text)
          workers.forEach((sum, i) => { expect(sum).toBeGreaterThanOrEqual(lastWorkers[i]!) })
          lastWorkers = workers
        }
        expect(last).toBeCloseTo(sums.reduce((a, b) => a + b, 0), 5)
      },
    ), { numRuns: 200 })
  })
})
