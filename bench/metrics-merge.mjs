// The control port's own work per /metrics scrape as the app's routes and the workers grow:
// the figures of W workers, each with R route patterns in 2 status classes, handed to the
// same ControlMetrics the supervisor uses (in this process, no HTTP), scraped for --duration
// seconds. Prints the main thread's CPU per scrape and the exposition's size.
//
//   node bench/metrics-merge.mjs [--routes 100] [--workers 2] [--duration 3]
//
// Needs the packages built (`pnpm run build`).
import { EventEmitter } from 'node:events'
import { fileURLToPath } from 'node:url'
import { benchArgs, wholeArg } from './lib/args.mjs'

const { values } = benchArgs({
  options: {
    routes: { type: 'string', default: '100' },
    workers: { type: 'string', default: '2' },
    duration: { type: 'string', default: '3' },
  },
})
const routes = wholeArg(values, 'routes', 1)
const workers = wholeArg(values, 'workers', 1)
const duration = wholeArg(values, 'duration', 1)
const dist = fileURLToPath(new URL('../packages/runtime/dist/metrics/', import.meta.url))
const { ControlMetrics } = await import(dist + 'control-metrics.js')
const { BucketHistogram } = await import(dist + 'bucket-histogram.js')
const { DURATION_BUCKETS } = await import(dist + 'worker-metrics.js')

/** One worker's figures: every route answered in 2xx and 4xx, a few observations each. */
function figures () {
  const h = new BucketHistogram('spindle_http_request_duration_seconds', 'Time from the request\'s arrival to its response', DURATION_BUCKETS)
  for (let r = 0; r < routes; r++) {
    for (const statusClass of ['2xx', '4xx']) {
      const series = h.series({ route: `/route-${r}/:id`, status_class: statusClass })
      for (const seconds of [0.0004, 0.003, 0.02, 0.2]) series.observe(seconds)
    }
  }
  return [h.snapshot()]
}

/** What ControlMetrics reads of the supervisor: every worker answered with its figures. */
class Figures extends EventEmitter {
  #answers = Array.from({ length: workers }, (_, i) => ({ id: i + 1, generation: 1, current: true, metrics: figures(), latest: undefined }))
  async workerMetrics () { return this.#answers }
  status () { return [] }
  isReady () { return true }
  readyWorkers () { return workers }
}

const metrics = new ControlMetrics(new Figures())
let bytes = 0
for (let i = 0; i < 20; i++) bytes = (await metrics.text()).length
const cpu0 = process.cpuUsage()
const t0 = performance.now()
let scrapes = 0
while (performance.now() - t0 < duration * 1000) { await metrics.text(); scrapes++ }
const cpu = process.cpuUsage(cpu0)
const msPerScrape = (cpu.user + cpu.system) / 1000 / scrapes
process.stdout.write(`${routes} routes × 2 status classes, ${workers} workers: ${msPerScrape.toFixed(2)} ms of CPU per scrape (${scrapes} scrapes), ${(bytes / 1024).toFixed(0)} KB of text\n`)
