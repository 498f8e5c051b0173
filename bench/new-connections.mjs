// How long a new connection waits for its first answer while the server is busy, and how
// evenly a closed loop's connections are served: starts a configuration, runs a closed loop
// of --connections keep-alive connections for --duration s (after --warmup s of the same
// load), and meanwhile opens --probes new connections at once every second, each sending
// one request. Prints the closed loop's req/s and p50/p99, its slowest connection's mean
// against the median connection's, and the probes' first-answer p50 and max
// (docs/overload.md#new-connections).
//
//   node bench/new-connections.mjs [--workload react-router] [--config spindle] [--workers 2]
//        [--connections 100] [--duration 8] [--warmup 3] [--probes 10]
import { request } from 'node:http'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { benchArgs, wholeArg } from './lib/args.mjs'
import { startServer, stopServer, waitPortFree } from './lib/processes.mjs'
import { median, percentile } from './lib/stats.mjs'
import { workloads } from './lib/workloads.mjs'

const { values } = benchArgs({
  options: {
    workload: { type: 'string', default: 'react-router' },
    config: { type: 'string', default: 'spindle' },
    workers: { type: 'string', default: '2' },
    connections: { type: 'string', default: '100' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '3' },
    probes: { type: 'string', default: '10' },
    port: { type: 'string', default: '3994' },
  },
})
const wl = workloads[values.workload]
if (!wl) throw new Error(`--workload must be one of ${Object.keys(workloads).join(', ')}`)
const workers = wholeArg(values, 'workers', 1)
const connections = wholeArg(values, 'connections', 1)
const duration = wholeArg(values, 'duration', 1)
const warmup = wholeArg(values, 'warmup', 0)
const probes = wholeArg(values, 'probes', 0)
const port = wholeArg(values, 'port', 1)
const problem = wl.prepare?.()
if (problem) throw new Error(problem)
const launch = wl.launch(values.config, { workers, port, workDir: fileURLToPath(new URL('./.work', import.meta.url)) })
if (launch.unavailable) throw new Error(launch.unavailable)
const url = `http://127.0.0.1:${port}${wl.path}`

/** One request on a connection of its own; resolves with ms to the whole answer. */
function probe () {
  const started = performance.now()
  return new Promise((resolve) => {
    const req = request(url, { agent: false, headers: { ...wl.headers, connection: 'close' }, timeout: 15_000 }, (res) => {
      res.resume()
      res.on('end', () => { resolve({ ok: res.statusCode === 200, ms: performance.now() - started }) })
    })
    req.on('error', () => { resolve({ ok: false, ms: performance.now() - started }) })
    req.on('timeout', () => { req.destroy() })
    req.end()
  })
}

/** The closed loop, with each connection's latencies apart. */
async function closedLoop (seconds) {
  const byClient = new Map()
  const all = []
  const instance = autocannon({ url, connections, duration: seconds, headers: wl.headers, timeout: 10 })
  instance.on('response', (client, _status, _bytes, ms) => {
    let list = byClient.get(client)
    if (!list) byClient.set(client, list = [])
    list.push(ms)
    all.push(ms)
  })
  const result = await instance
  all.sort((a, b) => a - b)
  const means = [...byClient.values()].map((l) => l.reduce((a, b) => a + b, 0) / l.length)
  return { rps: result['2xx'] / seconds, p50: percentile(all, 50), p99: percentile(all, 99), connectionMeans: means, served: byClient.size }
}

await waitPortFree(port)
const server = await startServer({ ...launch, readyUrl: url, headers: wl.headers })
try {
  if (warmup > 0) await closedLoop(warmup)
  const answers = []
  const timer = setInterval(() => { for (let i = 0; i < probes; i++) answers.push(probe()) }, 1000)
  const loop = await closedLoop(duration)
  clearInterval(timer)
  const firsts = (await Promise.all(answers)).sort((a, b) => a.ms - b.ms)
  const means = loop.connectionMeans.sort((a, b) => a - b)
  const round = (n) => Math.round(n)
  console.log(`${values.workload} / ${values.config}, ${workers} worker(s), ${connections} connections, ${duration} s`)
  console.log(`  closed loop: ${round(loop.rps)} req/s, p50 ${round(loop.p50)} ms, p99 ${round(loop.p99)} ms; ${loop.served} of ${connections} connections answered, slowest connection's mean ${round(means.at(-1) ?? 0)} ms against the median ${round(median(means))} ms`)
  if (firsts.length > 0) {
    const ms = firsts.map((f) => f.ms)
    console.log(`  new connections: ${firsts.length} (${firsts.filter((f) => !f.ok).length} not 200), first answer p50 ${round(percentile(ms, 50))} ms, max ${round(ms.at(-1))} ms`)
  }
} finally {
  await stopServer(server.child)
}
