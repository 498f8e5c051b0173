// How long the control port's /metrics takes to answer, idle and with the workers at
// capacity: the scrape is answered by the main thread, which never runs app code, but it
// carries every worker's request metrics.
//
//   node bench/metrics-scrape.mjs [--workload next] [--workers 2] [--duration 10] [--every 100]
//
// Starts `spindle start` on the workload with its defaults (shedding and metrics on) and a
// control port, scrapes /metrics every --every ms for --duration s while it idles, then for
// as long again under a closed loop of 100 connections (the workers busy rendering), and
// prints the answer time's percentiles for each phase, the body's size, and how many
// scrapes showed a worker with its previous figures (`spindle_metrics_workers_unanswered`).
import { request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { startServer, waitPortFree } from './lib/processes.mjs'
import { percentile } from './lib/stats.mjs'
import { workloads } from './lib/workloads.mjs'
import { benchArgs, wholeArg } from './lib/args.mjs'

const { values } = benchArgs({
  options: {
    workload: { type: 'string', default: 'next' },
    workers: { type: 'string', default: '2' },
    duration: { type: 'string', default: '10' },
    every: { type: 'string', default: '100' },
    port: { type: 'string', default: '3994' },
  },
})
const port = Number(values.port)
const controlPort = port + 1
const duration = wholeArg(values, 'duration', 1)
const every = wholeArg(values, 'every', 10)
const wl = workloads[values.workload]
if (!wl) throw new Error(`unknown workload ${values.workload}`)
const missing = wl.prepare()
if (missing) throw new Error(missing)
const url = `http://127.0.0.1:${port}${wl.path}`

/** One scrape: its answer time in ms, its size and the unanswered workers it reports. */
function scrape () {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const req = request({ host: '127.0.0.1', port: controlPort, path: '/metrics', agent: false }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString()
        const unanswered = Number(/^spindle_metrics_workers_unanswered (\S+)$/m.exec(body)?.[1] ?? NaN)
        resolve({ ms: performance.now() - t0, bytes: body.length, unanswered, status: res.statusCode })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** Scrapes every `every` ms until `until` resolves. */
async function scrapeWhile (until) {
  const results = []
  let done = false
  until.then(() => { done = true }, () => { done = true })
  while (!done) {
    results.push(await scrape())
    await sleep(every)
  }
  return results
}

function report (phase, results) {
  const ms = results.map((r) => r.ms).sort((a, b) => a - b)
  const late = results.filter((r) => r.unanswered > 0).length
  const bad = results.filter((r) => r.status !== 200).length
  console.log(`${phase.padEnd(22)} ${results.length} scrapes: p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms, max ${ms.at(-1).toFixed(1)} ms; ` +
    `${Math.round(results.at(-1).bytes / 1024)} KB; ${late} with a worker's previous figures${bad ? `; ${bad} not 200` : ''}`)
}

const spec = wl.launch('spindle', { workers: Number(values.workers), port, workDir: fileURLToPath(new URL('./.work', import.meta.url)) })
if (spec.unavailable) throw new Error(spec.unavailable)
// The harness starts Spindle without shedding or a control port; here both are on, as by default.
spec.args = spec.args.filter((a) => a !== '--no-shedding' && a !== '--no-control').concat('--control-port', String(controlPort))
await waitPortFree(port)
const server = await startServer({ ...spec, readyUrl: url, headers: wl.headers })
try {
  console.log(`${wl.title}: spindle start -w ${values.workers}, /metrics every ${every} ms`)
  // Warm-up: the routes have rendered, so the histograms carry their labels.
  await closedLoop({ url, connections: 16, duration: 3, headers: wl.headers })
  report('idle', await scrapeWhile(sleep(duration * 1000)))
  const load = closedLoop({ url, connections: 100, duration, headers: wl.headers })
  const loaded = await scrapeWhile(load)
  const { rps } = await load
  report(`at capacity (${Math.round(rps)} req/s)`, loaded)
} finally {
  await server.stop()
}
