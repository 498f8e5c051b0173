// Two settings of `spindle start` side by side: the same app with flags A and with flags B,
// rounds alternating, closed loop; prints req/s medians, 503s and the ratio A/B per workload.
//
//   node bench/variants.mjs --a= --b=--no-metrics      what request metrics cost
//   node bench/variants.mjs --a= --b=--no-shedding      shedding against clients that retry at once
//   [--workloads hello,react-router,next] [--rounds 5] [--duration 5] [--workers 2] [--connections 100]
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { startServer, waitPortFree } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'
import { workloads } from './lib/workloads.mjs'
import { benchArgs } from './lib/args.mjs'
import { roundOrder } from './lib/round-order.mjs'

const { values } = benchArgs({
  options: {
    workloads: { type: 'string', default: 'hello,react-router' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
    connections: { type: 'string', default: '100' },
    port: { type: 'string', default: '3992' },
    a: { type: 'string', default: '' },
    b: { type: 'string', default: '--no-metrics' },
  },
})
const port = Number(values.port)
const workDir = fileURLToPath(new URL('./.work', import.meta.url))
const flags = (s) => s.split(' ').filter(Boolean)
const variants = { A: flags(values.a), B: flags(values.b) }
const out = {}
for (const name of values.workloads.split(',')) {
  const wl = workloads[name]
  if (!wl) throw new Error(`unknown workload ${name}`)
  const missing = wl.prepare()
  if (missing) { process.stderr.write(`${name}: skipped, ${missing}\n`); continue }
  out[name] = { A: [], B: [], A503: [], B503: [] }
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const [variant, extra] of roundOrder(Object.entries(variants), round)) {
      const spec = wl.launch('spindle', { workers: Number(values.workers), port, workDir })
      // The harness starts Spindle with --no-shedding; each variant says what it wants.
      spec.args = spec.args.filter((a) => a !== '--no-shedding').concat(extra)
      const url = `http://127.0.0.1:${port}${wl.path}`
      const server = await startServer({ ...spec, readyUrl: url, headers: wl.headers })
      try {
        await closedLoop({ url, connections: Number(values.connections), duration: 2, headers: wl.headers })
        const r = await closedLoop({ url, connections: Number(values.connections), duration: Number(values.duration), headers: wl.headers })
        out[name][variant].push(r.rps)
        out[name][variant + '503'].push((r.total - r.ok) / Number(values.duration))
        process.stderr.write(`round ${round} ${name} ${variant} (${extra.join(' ') || 'defaults'}): ${Math.round(r.rps)} req/s, ${Math.round((r.total - r.ok) / Number(values.duration))} other answers/s\n`)
      } finally {
        await server.stop()
        await waitPortFree(port)
      }
    }
  }
}
process.stdout.write(`A: spindle start ${values.a || '(defaults)'}; B: spindle start ${values.b || '(defaults)'}; ${values.workers} workers, ${values.connections} connections, ${values.rounds} alternating rounds of ${values.duration} s, medians\n\n`)
process.stdout.write('| workload | A 2xx req/s | B 2xx req/s | A / B | A non-2xx/s | B non-2xx/s |\n|---|---|---|---|---|---|\n')
for (const [name, r] of Object.entries(out)) {
  const a = median(r.A)
  const b = median(r.B)
  process.stdout.write(`| ${name} | ${Math.round(a)} | ${Math.round(b)} | ${(a / b).toFixed(3)} | ${Math.round(median(r.A503))} | ${Math.round(median(r.B503))} |\n`)
}
