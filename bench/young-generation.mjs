// The young generation's trade between throughput and memory: `spindle start` with each
// `youngGenerationMb` in turn against node:cluster, rounds alternating, closed loop; req/s
// and the RSS of the server's process tree (median of samples every 0.5 s under the load),
// each as a ratio of node:cluster's.
//
//   node bench/young-generation.mjs [--sizes 48,96,0] [--workload next] [--rounds 3]
//     [--duration 8] [--workers 2] [--connections 100]
// Size 0 is V8's own young generation for a worker; 48 the runtime's default.
import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { sampleMemory, startServer, waitPortFree } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'
import { workloads } from './lib/workloads.mjs'
import { benchArgs, wholeArg } from './lib/args.mjs'

const { values } = benchArgs({
  options: {
    sizes: { type: 'string', default: '48,96,0' },
    workload: { type: 'string', default: 'next' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    workers: { type: 'string', default: '2' },
    connections: { type: 'string', default: '100' },
    port: { type: 'string', default: '3994' },
  },
})
const rounds = wholeArg(values, 'rounds', 1)
const duration = wholeArg(values, 'duration', 1)
const workers = wholeArg(values, 'workers', 1)
const connections = wholeArg(values, 'connections', 1)
const port = wholeArg(values, 'port', 1)
const sizes = values.sizes.split(',').map((s) => {
  const n = Number(s)
  if (!Number.isInteger(n) || n < 0 || (n > 0 && n < 3)) throw new Error(`--sizes: ${JSON.stringify(s)} is not 0 or a whole number of MB of at least 3`)
  return n
})
const wl = workloads[values.workload]
if (!wl) throw new Error(`--workload: unknown workload ${JSON.stringify(values.workload)} (${Object.keys(workloads).join(', ')})`)
const missing = wl.prepare()
if (missing) throw new Error(missing)
const workDir = fileURLToPath(new URL('./.work/young-generation/', import.meta.url))
mkdirSync(workDir, { recursive: true })
const url = `http://127.0.0.1:${port}${wl.path}`

/** The launch of one configuration: node:cluster, or Spindle with a config file that sets the size. */
function launch (name) {
  if (name === 'cluster') return wl.launch('cluster', { workers, port, workDir })
  const spec = wl.launch('spindle', { workers, port, workDir })
  const mb = Number(name.slice('spindle-'.length))
  // The example's own config file, with the size set: its app and its directory stay the same.
  const config = `${workDir}spindle-${mb}.config.mjs`
  writeFileSync(config, `import base from ${JSON.stringify(spec.cwd + '/spindle.config.js')}\n` +
    `export default { ...base, app: ${JSON.stringify(spec.cwd + '/app.js')}, cwd: ${JSON.stringify(spec.cwd)}, youngGenerationMb: ${mb} }\n`)
  spec.args.splice(2, 0, '-c', config)
  return spec
}

const names = [...sizes.map((mb) => `spindle-${mb}`), 'cluster']
const out = Object.fromEntries(names.map((n) => [n, { rps: [], rss: [] }]))
for (let round = 1; round <= rounds; round++) {
  for (const name of names) {
    await waitPortFree(port)
    const server = await startServer({ ...launch(name), readyUrl: url, headers: wl.headers })
    try {
      await closedLoop({ url, connections, duration: 3, headers: wl.headers })
      const memory = sampleMemory(server.pid)
      const r = await closedLoop({ url, connections, duration, headers: wl.headers })
      const rss = memory.stop().rssMedian / 2 ** 20
      out[name].rps.push(r.rps)
      out[name].rss.push(rss)
      process.stderr.write(`round ${round} ${name}: ${Math.round(r.rps)} req/s, RSS ${Math.round(rss)} MB\n`)
    } finally {
      await server.stop()
    }
  }
}
const base = { rps: median(out.cluster.rps), rss: median(out.cluster.rss) }
process.stdout.write(`${values.workload}, ${workers} workers, ${connections} connections, ${rounds} alternating rounds of ${duration} s after 3 s of warm-up, medians\n\n`)
process.stdout.write('| configuration | req/s | × node:cluster | RSS MB | × node:cluster RSS |\n|---|---|---|---|---|\n')
for (const name of names) {
  const rps = median(out[name].rps)
  const rss = median(out[name].rss)
  const label = name === 'cluster' ? 'node:cluster' : `Spindle, youngGenerationMb ${name.slice('spindle-'.length)}`
  process.stdout.write(`| ${label} | ${Math.round(rps)} | ${(rps / base.rps).toFixed(2)} | ${Math.round(rss)} | ${(rss / base.rss).toFixed(2)} |\n`)
}
