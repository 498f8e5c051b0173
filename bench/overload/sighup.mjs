// A rolling restart under bursty load below capacity: what a routine deploy costs.
//
//   node bench/overload/sighup.mjs [--workload react-router|next] [--share 0.5] [--duration 20]
//     [--connections 50] [--workers 2] [--rounds 1] [--capacity N] [--config spindle|spindle-pool]
//
// Measures the closed-loop capacity of the example on a Spindle server with shedding off
// (16 connections, unless --capacity gives it), then starts Spindle with its defaults
// (shedding on) and sends autocannon's rate-limited load (`-R share x capacity`, which sends
// each second's requests at once: bursts) for --duration seconds, with one SIGHUP (rolling
// restart: every worker replaced in turn) at half time. Prints the answers by status, errors
// and timeouts, and the 2xx latency percentiles. `--config spindle-pool` runs pool mode
// (`--mode pool`: one Fastify worker, --workers pool threads) instead of reusePort mode.
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { closedLoop } from '../lib/closed-loop.mjs'
import { startServer, waitPortFree } from '../lib/processes.mjs'
import { workloads } from '../lib/workloads.mjs'
import { benchArgs } from '../lib/args.mjs'

const { values } = benchArgs({
  options: {
    workload: { type: 'string', default: 'react-router' },
    share: { type: 'string', default: '0.5' },
    duration: { type: 'string', default: '20' },
    connections: { type: 'string', default: '50' },
    workers: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '1' },
    capacity: { type: 'string' },
    port: { type: 'string', default: '3993' },
    config: { type: 'string', default: 'spindle' },
  },
})
if (values.config !== 'spindle' && values.config !== 'spindle-pool') throw new Error(`--config must be spindle or spindle-pool, got ${JSON.stringify(values.config)}`)
const port = Number(values.port)
const workers = Number(values.workers)
const duration = Number(values.duration)
const wl = workloads[values.workload]
if (!wl) throw new Error(`unknown workload ${values.workload}`)
const missing = wl.prepare()
if (missing) throw new Error(missing)
const url = `http://127.0.0.1:${port}${wl.path}`

async function start (shedding) {
  const spec = wl.launch(values.config, { workers, port })
  spec.args = spec.args.filter((a) => a !== '--no-shedding' && a !== '--no-control')
  if (!shedding) spec.args.push('--no-shedding')
  // The control port is not needed; a free one keeps runs from clashing.
  spec.args.push('--control-port', String(port + 1))
  return await startServer({ ...spec, readyUrl: url, headers: wl.headers })
}

let capacity = values.capacity ? Number(values.capacity) : undefined
if (capacity === undefined) {
  const server = await start(false)
  try {
    await closedLoop({ url, connections: 16, duration: 3, headers: wl.headers })
    capacity = (await closedLoop({ url, connections: 16, duration: 5, headers: wl.headers })).rps
  } finally {
    await server.stop()
    await waitPortFree(port)
  }
}
const rate = Math.round(Number(values.share) * capacity)
process.stdout.write(`${wl.title}: capacity ${Math.round(capacity)} req/s (closed loop, 16 connections, shedding off); load ${rate} req/s (autocannon -R ${rate} -c ${values.connections}), ${duration} s, SIGHUP at ${duration / 2} s, ${workers} ${values.config === 'spindle' ? 'workers' : 'pool threads (pool mode)'}, shedding on\n\n`)
process.stdout.write('| round | requests | 2xx | 503 | other non-2xx | errors | timeouts | 2xx p50 / p99 ms |\n|---|---|---|---|---|---|---|---|\n')

for (let round = 1; round <= Number(values.rounds); round++) {
  const server = await start(true)
  try {
    // Warm, as a server that has been serving is.
    await closedLoop({ url, connections: 8, duration: 3, headers: wl.headers })
    const run = autocannon({ url, connections: Number(values.connections), overallRate: rate, duration, headers: wl.headers, timeout: 10 })
    await sleep(duration * 500)
    process.kill(server.pid, 'SIGHUP')
    const r = await run
    const codes = r.statusCodeStats ?? {}
    const count = (pred) => Object.entries(codes).filter(([code]) => pred(Number(code))).reduce((n, [, s]) => n + s.count, 0)
    const ok = count((c) => c >= 200 && c < 300)
    const shed = count((c) => c === 503)
    const other = count((c) => c >= 300 && c !== 503)
    process.stdout.write(`| ${round} | ${r.requests.total} | ${ok} | ${shed} | ${other} | ${r.errors} | ${r.timeouts} | ${r.latency.p50} / ${r.latency.p99} |\n`)
  } finally {
    await server.stop()
    await waitPortFree(port)
  }
}
