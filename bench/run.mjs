// Spindle against its peers: every workload × configuration, alternating configurations
// round by round, closed-loop capacity and open-loop overload, one markdown table and one
// SVG chart in bench/results/. Load goes to 127.0.0.1 only; every server is stopped.
//
//   pnpm bench [--workloads hello,next,react-router] [--configs single,cluster,pm2,watt,spindle-1,spindle]
//              [--rounds 2] [--duration 6] [--workers N] [--no-open] [--max-minutes 18]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { availableParallelism, cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { openLoop } from './lib/open-loop.mjs'
import { portAnswers, sampleMemory, startServer, treeCpuSeconds, waitPortFree } from './lib/processes.mjs'
import { CONFIG_TITLES, markdown, summarize, svgChart } from './lib/report.mjs'
import { workloads } from './lib/workloads.mjs'
import { benchArgs } from './lib/args.mjs'
import { roundOrder } from './lib/round-order.mjs'

/** The version of every framework and peer measured, as installed for this run. */
function versions () {
  const out = {}
  const from = (dir, pkgs) => {
    const req = createRequire(`${here}${dir}/package.json`)
    for (const pkg of pkgs) {
      try { out[pkg] ??= JSON.parse(readFileSync(req.resolve(`${pkg}/package.json`), 'utf8')).version } catch { /* not installed */ }
    }
  }
  from('../examples/next', ['next', 'react'])
  from('../examples/react-router', ['react-router'])
  from('../packages/runtime', ['fastify'])
  from('.', ['pm2', 'wattpm', '@platformatic/next', '@react-router/serve', 'autocannon'])
  return out
}

// pnpm passes a `--` separator through to the script (`npm run bench -- --workloads next`).
const { values } = benchArgs({
  options: {
    workloads: { type: 'string', default: Object.keys(workloads).join(',') },
    configs: { type: 'string', default: Object.keys(CONFIG_TITLES).join(',') },
    rounds: { type: 'string', default: '2' },
    duration: { type: 'string', default: '6' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '100' },
    workers: { type: 'string', default: String(availableParallelism()) },
    'open-factor': { type: 'string', default: '1.5' },
    'no-open': { type: 'boolean', default: false },
    port: { type: 'string', default: '3990' },
    'max-minutes': { type: 'string', default: '18' },
    help: { type: 'boolean', short: 'h' },
  },
})
if (values.help) {
  process.stdout.write(`pnpm bench [--workloads ${Object.keys(workloads).join(',')}] [--configs ${Object.keys(CONFIG_TITLES).join(',')}]\n` +
    '           [--rounds 2] [--duration 6] [--warmup 2] [--connections 100] [--workers N] [--open-factor 1.5] [--no-open] [--port 3990] [--max-minutes 18]\n')
  process.exit(0)
}

const list = (s, known, what) => s.split(',').map((x) => x.trim()).filter(Boolean).map((x) => {
  if (!known.includes(x)) { process.stderr.write(`unknown ${what} "${x}" (known: ${known.join(', ')})\n`); process.exit(2) }
  return x
})
const selected = list(values.workloads, Object.keys(workloads), 'workload')
const configs = list(values.configs, Object.keys(CONFIG_TITLES), 'configuration')
// The single process runs first in the first round: its capacity sets the open-loop rate.
configs.sort((a, b) => (a === 'single' ? -1 : b === 'single' ? 1 : 0))
const num = (name) => {
  const v = Number(values[name])
  if (!(v > 0)) { process.stderr.write(`--${name} must be a positive number\n`); process.exit(2) }
  return v
}
const opts = {
  rounds: num('rounds'), duration: num('duration'), warmup: num('warmup'), connections: num('connections'),
  workers: num('workers'), openFactor: num('open-factor'), port: num('port'), maxMs: num('max-minutes') * 60_000,
}
const here = fileURLToPath(new URL('.', import.meta.url))
const workDir = here + '.work'
mkdirSync(workDir, { recursive: true })
const startedAt = Date.now()
const log = (msg) => process.stderr.write(`[bench ${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`)


if (await portAnswers(opts.port)) { log(`port ${opts.port} is in use: pick another with --port`); process.exit(1) }

const results = {}
for (const name of selected) {
  const wl = workloads[name]
  const missing = wl.prepare()
  results[name] = { title: wl.title, configs: {}, runs: {}, skipped: missing }
  if (missing) log(`${name}: skipped, ${missing}`)
}

let outOfTime = false
// Interrupted runs stop the server under test too: nothing is left listening.
let current
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: stopping the server under test`)
    Promise.resolve(current?.stop()).finally(() => process.exit(130))
  })
}
for (let round = 1; round <= opts.rounds && !outOfTime; round++) {
  for (const name of selected) {
    const block = results[name]
    if (block.skipped) continue
    const wl = workloads[name]
    for (const config of roundOrder(configs, round)) {
      if (Date.now() - startedAt > opts.maxMs) { outOfTime = true; log('time budget used up: reporting what was measured'); break }
      block.configs[config] ??= {}
      const entry = block.configs[config]
      if (entry.unavailable) continue
      const spec = wl.launch(config, { workers: opts.workers, port: opts.port, workDir })
      if (spec.unavailable) { entry.unavailable = spec.unavailable; log(`${name} / ${config}: not run, ${spec.unavailable}`); continue }
      const url = `http://127.0.0.1:${opts.port}${wl.path}`
      let server
      try {
        server = await startServer({ ...spec, readyUrl: url, headers: wl.headers })
        current = server
        await closedLoop({ url, connections: opts.connections, duration: opts.warmup, headers: wl.headers, paths: wl.paths })
        const cpu0 = treeCpuSeconds(server.pid)
        const memory = sampleMemory(server.pid)
        const closed = await closedLoop({ url, connections: opts.connections, duration: opts.duration, headers: wl.headers, paths: wl.paths })
        const cpu = (treeCpuSeconds(server.pid) - cpu0) / opts.duration
        const mem = memory.stop()
        let open
        const baseRps = block.configs.single?.runs?.[0]?.closed.rps ?? (config === 'single' ? closed.rps : undefined)
        if (!values['no-open'] && wl.open !== false && baseRps) {
          const rate = Math.round(baseRps * opts.openFactor)
          const o = await openLoop({ url, rate, duration: opts.duration, timeout: 5000, headers: wl.headers })
          open = { rate, sent: o.sent, successPct: o.successPct, goodput: o.goodput, ...o.latency2xx, timeouts: o.timeouts, errors: o.errors + o.otherStatus + o.dropped }
        }
        ;(entry.runs ??= []).push({ closed, cpu, mem, open })
        log(`round ${round} ${name} / ${config}: ${Math.round(closed.rps)} req/s, p99 ${closed.p99} ms, cpu ${cpu.toFixed(2)}, rss ${(mem.rssMedian / 2 ** 20).toFixed(0)} MB` +
          (open ? `; open ${open.rate}/s: ${open.successPct.toFixed(2)} % ok, p95 ${open.p95} ms, ${open.timeouts} timeouts` : ''))
      } catch (err) {
        entry.error = String(err.message).split('\n')[0]
        log(`${name} / ${config}: failed: ${err.message.slice(0, 2000)}`)
      } finally {
        if (server) await server.stop()
        current = undefined
        await waitPortFree(opts.port)
      }
    }
  }
}

for (const block of Object.values(results)) {
  for (const entry of Object.values(block.configs)) if (entry.runs?.length) entry.summary = summarize(entry.runs)
}
const meta = {
  date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  node: process.version,
  versions: versions(),
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown CPU',
  ...opts,
  partial: outOfTime,
}
const report = { meta, results }
const md = markdown(report) + (outOfTime ? '\n_The run hit its time budget; some cells have fewer rounds._\n' : '')
const outDir = here + 'results'
mkdirSync(outDir, { recursive: true })
const stamp = meta.date.replace(/[:]/g, '-')
writeFileSync(`${outDir}/${stamp}.md`, md)
writeFileSync(`${outDir}/latest.md`, md)
writeFileSync(`${outDir}/latest.svg`, svgChart(report))
writeFileSync(`${outDir}/latest.json`, JSON.stringify(report, null, 2))
process.stdout.write('\n' + md + '\n')
log(`written to bench/results/latest.md, latest.svg, latest.json and ${stamp}.md`)
