// A histogram for the request path, read by prom-client's registry like its own. prom-client's
// Histogram validates and hashes the label set on every observe(), labelled child or not;
// in a worker serving a small JSON route that came to about 2 % of the thread's time (CPU
// profile, bench/profile.mjs, hello-world). Here a series is looked up once and an
// observation is a bucket scan and two additions. The registry asks `get()` for the same
// plain data prom-client's Histogram gives, so aggregation across workers and the text
// format are prom-client's.

type Labels = Record<string, string>
interface Value { labels: Record<string, string | number>, value: number, metricName: string }
/** One metric as prom-client's registry reads it from `get()`. */
export interface HistogramData { name: string, help: string, type: 'histogram', values: Value[], aggregator: 'sum' }

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
  readonly type = 'histogram'
  readonly aggregator = 'sum' as const
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

  /** What prom-client's registry reads: cumulative buckets, +Inf, sum and count per series. */
  async get (): Promise<HistogramData> {
    const values: Value[] = []
    const bucket = `${this.name}_bucket`
    for (const s of this.#series.values()) {
      let acc = 0
      this.#bounds.forEach((le, i) => {
        acc += s.counts[i]!
        values.push({ labels: { le, ...s.labels }, value: acc, metricName: bucket })
      })
      values.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: bucket })
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` })
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` })
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: this.aggregator }
  }

  reset (): void {
    this.#series.clear()
  }
}
