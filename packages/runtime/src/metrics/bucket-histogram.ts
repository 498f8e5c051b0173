// A histogram for the request path. prom-client's Histogram validates and hashes the label
// set on every observe(), labelled child or not; in a worker serving a small JSON route that
// came to about 2 % of the thread's time (CPU profile, bench/profile.mjs, hello-world). Here
// a series is looked up once and an observation is a bucket scan and two additions. Its
// figures leave as one entry per series (protocol.ts, MetricSnapshot); the control port
// adds them up and prints them (figures.ts, exposition.ts).
import type { HistogramSeriesFigures, MetricSnapshot } from '../protocol.ts'

type Labels = Record<string, string>

export class HistogramSeries {
  readonly labels: Labels
  readonly counts: Float64Array
  sum = 0
  count = 0
  readonly #bounds: readonly number[]

  constructor (labels: Labels, bounds: readonly number[]) {
    this.labels = labels
    this.#bounds = bounds
    this.counts = new Float64Array(bounds.length)
  }

  observe (value: number): void {
    const bounds = this.#bounds
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    if (i < bounds.length) this.counts[i]!++
    this.sum += value
    this.count++
  }
}

export class BucketHistogram {
  readonly name: string
  readonly help: string
  readonly #bounds: readonly number[]
  readonly #series = new Map<string, HistogramSeries>()

  constructor (name: string, help: string, bounds: readonly number[]) {
    this.name = name
    this.help = help
    this.#bounds = [...bounds].sort((a, b) => a - b)
  }

  /** The series for these labels, made on first use; keep it and call observe() on it. */
  series (labels: Labels = {}): HistogramSeries {
    const key = JSON.stringify(labels)
    let s = this.#series.get(key)
    if (!s) { s = new HistogramSeries(labels, this.#bounds); this.#series.set(key, s) }
    return s
  }

  /** Every series' figures so far, as plain data. */
  snapshot (): MetricSnapshot {
    const series: HistogramSeriesFigures[] = []
    for (const s of this.#series.values()) series.push({ labels: s.labels, buckets: Array.from(s.counts), sum: s.sum, count: s.count })
    return { type: 'histogram', name: this.name, help: this.help, bounds: [...this.#bounds], series }
  }
}
