import { describe, expect, it } from 'vitest'
import { Histogram, Registry } from 'prom-client'
import { BucketHistogram } from '../src/metrics/bucket-histogram.ts'

describe('BucketHistogram', () => {
  it('reads like prom-client\'s own Histogram for the same observations, in JSON and in text', async () => {
    const buckets = [0.001, 0.01, 0.1, 1]
    const values = [0.0005, 0.001, 0.002, 0.05, 0.5, 3, 0.01, 0.0999, 7]
    const ours = new Registry()
    const theirs = new Registry()
    const fast = new BucketHistogram('h_seconds', 'help', buckets)
    ours.registerMetric(fast as never)
    const reference = new Histogram({ name: 'h_seconds', help: 'help', labelNames: ['route', 'status_class'], buckets, registers: [theirs] })
    values.forEach((v, i) => {
      const labels = { route: i % 2 ? '/a' : '/b', status_class: '2xx' }
      fast.series(labels).observe(v)
      reference.observe(labels, v)
    })
    expect(await ours.metrics()).toBe(await theirs.metrics())
    const [a] = await ours.getMetricsAsJSON()
    const [b] = await theirs.getMetricsAsJSON()
    expect(a!.values.map((v) => [v.labels, v.value, (v as { metricName?: string }).metricName]))
      .toEqual(b!.values.map((v) => [v.labels, v.value, (v as { metricName?: string }).metricName]))
  })
})
