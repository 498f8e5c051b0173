// Prometheus text format (version 0.0.4) for metric figures (protocol.ts, MetricSnapshot),
// line for line what prom-client's Registry prints for the same metrics
// (test/exposition.test.ts holds it to that). Written here for a measured reason: handing
// the workers' added-up figures to prom-client meant rebuilding a metric object per series
// and hashing every bucket's labels again (AggregatorRegistry), then escaping each line's
// labels; with 100 routes on 2 workers a scrape took 50-100 ms of the main thread. Here a
// series' labels are escaped once and each bucket line is one concatenation.
import type { MetricLabels, MetricSnapshot } from '../protocol.ts'

const escapeText = (text: string): string => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

function escapeLabelValue (value: string | number): string {
  return typeof value === 'string' ? escapeText(value).replace(/"/g, '\\"') : String(value)
}

/** `name="value",…` (no braces); '' for no labels. */
function labelList (labels: MetricLabels): string {
  let out = ''
  for (const name in labels) out += `${out === '' ? '' : ','}${name}="${escapeLabelValue(labels[name]!)}"`
  return out
}

function value (n: number): string {
  if (Number.isNaN(n)) return 'NaN'
  if (n === Infinity) return '+Inf'
  if (n === -Infinity) return '-Inf'
  return String(n)
}

function lines (metric: MetricSnapshot): string {
  const name = escapeText(metric.name)
  let out = `# HELP ${name} ${escapeText(metric.help)}\n# TYPE ${name} ${metric.type}`
  if (metric.type !== 'histogram') {
    for (const v of metric.values) {
      const labels = labelList(v.labels)
      out += `\n${name}${labels === '' ? '' : `{${labels}}`} ${value(v.value)}`
    }
    return out
  }
  const les = [...metric.bounds.map((b) => `le="${b}"`), 'le="+Inf"']
  for (const s of metric.series) {
    const labels = labelList(s.labels)
    const rest = labels === '' ? '' : `,${labels}`
    let cumulative = 0
    for (let i = 0; i < metric.bounds.length; i++) {
      cumulative += s.buckets[i] ?? 0
      out += `\n${name}_bucket{${les[i]}${rest}} ${value(cumulative)}`
    }
    out += `\n${name}_bucket{${les[metric.bounds.length]}${rest}} ${value(s.count)}`
    const braced = labels === '' ? '' : `{${labels}}`
    out += `\n${name}_sum${braced} ${value(s.sum)}\n${name}_count${braced} ${value(s.count)}`
  }
  return out
}

/** The exposition text of `metrics`, each metric's block apart from the next by a blank line, as prom-client separates them; '' for none. */
export function exposition (metrics: readonly MetricSnapshot[]): string {
  return metrics.length === 0 ? '' : `${metrics.map(lines).join('\n\n')}\n`
}
