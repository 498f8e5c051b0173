import { describe, expect, it } from 'vitest'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { BucketHistogram } from '../src/metrics/bucket-histogram.ts'
import { exposition } from '../src/metrics/exposition.ts'
import { addSnapshots, perWorker, sumsInMicros, sumsInSeconds } from '../src/metrics/figures.ts'
import type { MetricSnapshot } from '../src/protocol.ts'

// The control port prints the workers' figures itself (exposition.ts); Prometheus must read
// the same text that prom-client would print for the same metrics.

const BOUNDS = [0.001, 0.01, 0.1, 1]
// Label values with every character the text format escapes.
const ROUTES = ['/a', '/b/:id', '/q"uote', '/back\\slash', '/new\nline']

describe('exposition', () => {
  it('prints histograms, counters and gauges as prom-client does', async () => {
    const values = [0.0005, 0.001, 0.002, 0.05, 0.5, 3, 0.01, 0.0999, 7, 0.25]
    const theirs = new Registry()
    const reference = new Histogram({ name: 'h_seconds', help: 'a help\nwith \\ escapes', labelNames: ['route', 'status_class'], buckets: BOUNDS, registers: [theirs] })
    const counter = new Counter({ name: 'c_total', help: 'counted', labelNames: ['outcome'], registers: [theirs] })
    const gauge = new Gauge({ name: 'g', help: 'gauged', registers: [theirs] })
    const ours = new BucketHistogram('h_seconds', 'a help\nwith \\ escapes', BOUNDS)
    values.forEach((v, i) => {
      const labels = { route: ROUTES[i % ROUTES.length]!, status_class: '2xx' }
      ours.series(labels).observe(v)
      reference.observe(labels, v)
    })
    counter.inc({ outcome: 'hit' }, 3)
    counter.inc({ outcome: 'miss' }, 2)
    gauge.set(0.5)
    const snapshots: MetricSnapshot[] = [
      ours.snapshot(),
      { type: 'counter', name: 'c_total', help: 'counted', values: [{ value: 3, labels: { outcome: 'hit' } }, { value: 2, labels: { outcome: 'miss' } }] },
      { type: 'gauge', name: 'g', help: 'gauged', values: [{ value: 0.5, labels: {} }] },
    ]
    expect(exposition(snapshots)).toBe(await theirs.metrics())
  })

  it('adds up workers bucket by bucket, and labels each worker\'s own series', async () => {
    // Sums exact both in binary and in microseconds, so prom-client's float sums are exact too.
    const workers = [[0, 0.25, 0.0625], [0.015625, 5, 0.5, 0.03125]]
    const theirs = new Registry()
    const total = new Histogram({ name: 'spindle_h_seconds', help: 'h', labelNames: ['route'], buckets: BOUNDS, registers: [theirs] })
    const each = new Histogram({ name: 'spindle_worker_h_seconds', help: 'h, per worker', labelNames: ['route', 'worker'], buckets: BOUNDS, registers: [theirs] })
    const lists = workers.map((observations, w) => {
      const h = new BucketHistogram('spindle_h_seconds', 'h', BOUNDS)
      for (const v of observations) {
        h.series({ route: '/' }).observe(v)
        total.observe({ route: '/' }, v)
        each.observe({ route: '/', worker: w + 1 }, v)
      }
      return [h.snapshot()]
    })
    const before = structuredClone(lists)
    // As the control port adds them: sums in whole microseconds, so the order of the terms
    // cannot change the total.
    const micros = lists.map(sumsInMicros)
    const summed = sumsInSeconds(addSnapshots(micros))
    const perWorkerFigures = sumsInSeconds(addSnapshots(micros.map((list, w) => list.map((m) => perWorker(m, w + 1)))))
    expect(exposition([...summed, ...perWorkerFigures])).toBe(await theirs.metrics())
    // The inputs are left as they were: the control port keeps each worker's last figures.
    expect(lists).toEqual(before)
  })
})
