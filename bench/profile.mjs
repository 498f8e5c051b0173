// CPU profiles of one configuration under closed-loop load: the server runs with
// `--cpu-prof` (worker threads write a profile of their own), and the script prints where
// the request-serving thread spent its time: self time by function and by area (the
// framework, Fastify, node:http, Spindle, garbage collection, idle).
//
//   node bench/profile.mjs --workload hello --config spindle-1 [--duration 8] [--top 25]
//        [--workers 1] [--thread busiest|main] [--shedding]
//
// `--shedding` profiles Spindle with its defaults (shedding on); the benchmark runs it off.
//
// `--thread main` reads the main thread's profile instead of the busiest one: in the
// `adapter-pool` configuration that is the thread that runs Fastify and dispatches to the pool.
//
// Compare two configurations by running it twice (e.g. `single` and `spindle-1`); the
// profiler slows every function alike, so compare shares, not absolute times.
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { startServer, waitPortFree } from './lib/processes.mjs'
import { workloads } from './lib/workloads.mjs'
import { benchArgs, wholeArg } from './lib/args.mjs'

const { values } = benchArgs({
  options: {
    workload: { type: 'string', default: 'hello' },
    config: { type: 'string', default: 'spindle-1' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '50' },
    top: { type: 'string', default: '25' },
    workers: { type: 'string', default: '1' },
    thread: { type: 'string', default: 'busiest' },
    port: { type: 'string', default: '3991' },
    shedding: { type: 'boolean', default: false },
  },
})
const wl = workloads[values.workload]
if (!wl) { process.stderr.write(`unknown workload ${values.workload}\n`); process.exit(2) }
const here = fileURLToPath(new URL('.', import.meta.url))
const workDir = here + '.work'
const profDir = `${workDir}/profile-${values.workload}-${values.config}`
rmSync(profDir, { recursive: true, force: true })
mkdirSync(profDir, { recursive: true })
const missing = wl.prepare()
if (missing) { process.stderr.write(`${missing}\n`); process.exit(1) }
const port = Number(values.port)
if (values.thread !== 'busiest' && values.thread !== 'main') { process.stderr.write(`--thread must be busiest or main, got ${values.thread}\n`); process.exit(2) }
const spec = wl.launch(values.config, { workers: wholeArg(values, 'workers', 1), port, workDir })
if (spec.unavailable) { process.stderr.write(`${spec.unavailable}\n`); process.exit(1) }
if (values.shedding) spec.args = spec.args.filter((a) => a !== '--no-shedding')
const url = `http://127.0.0.1:${port}${wl.path}`
// NODE_OPTIONS reaches the process that serves in every configuration (a spawned `next start`
// or a PM2/cluster worker too). Worker threads inherit execArgv, not NODE_OPTIONS: for the
// threads of a render pool (piscina) the flags go on the command line as well.
const flags = ['--cpu-prof', `--cpu-prof-dir=${profDir}`]
const server = await startServer({
  ...spec,
  args: spec.command === process.execPath ? [...flags, ...spec.args] : spec.args,
  env: { ...spec.env, NODE_OPTIONS: flags.join(' ') },
  readyUrl: url,
  headers: wl.headers,
})
try {
  await closedLoop({ url, connections: Number(values.connections), duration: 2, headers: wl.headers, paths: wl.paths })
  const r = await closedLoop({ url, connections: Number(values.connections), duration: Number(values.duration), headers: wl.headers, paths: wl.paths })
  process.stdout.write(`${values.workload} / ${values.config}: ${Math.round(r.rps)} req/s under the profiler\n`)
} finally {
  await server.stop()
  await waitPortFree(port)
}

// The busiest profile is the thread that served requests (or the main thread's, with --thread main).
const profiles = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => {
  const p = JSON.parse(readFileSync(`${profDir}/${f}`, 'utf8'))
  const self = selfTimes(p)
  const busy = [...self.values()].reduce((a, s) => a + (s.idle ? 0 : s.us), 0)
  return { f, self, busy }
}).filter((p) => values.thread === 'busiest' || /^CPU\.\d+\.\d+\.\d+\.0\./.test(p.f)).sort((a, b) => b.busy - a.busy)
if (profiles.length === 0) { process.stderr.write('no profile was written\n'); process.exit(1) }
const { f, self, busy } = profiles[0]
process.stdout.write(`profile ${f} (${profiles.length} written): ${(busy / 1e6).toFixed(2)} s busy\n\n`)

const areas = new Map()
for (const s of self.values()) {
  if (s.idle) continue
  areas.set(s.area, (areas.get(s.area) ?? 0) + s.us)
}
process.stdout.write('| area | share of busy time |\n|---|---|\n')
for (const [area, us] of [...areas].sort((a, b) => b[1] - a[1])) process.stdout.write(`| ${area} | ${(100 * us / busy).toFixed(1)} % |\n`)
process.stdout.write('\n| function | where | self % |\n|---|---|---|\n')
for (const s of [...self.values()].filter((s) => !s.idle).sort((a, b) => b.us - a.us).slice(0, Number(values.top))) {
  process.stdout.write(`| ${s.name} | ${s.where} | ${(100 * s.us / busy).toFixed(1)} |\n`)
}
process.stdout.write(`\nprofiles kept in ${profDir} (open them in Chrome DevTools or speedscope)\n`)

/** Self time per function (µs), from the samples and their time deltas. */
function selfTimes (profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const out = new Map()
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)
    const { functionName, url, lineNumber } = node.callFrame
    const name = functionName || '(anonymous)'
    const key = `${name} ${url}:${lineNumber}`
    let s = out.get(key)
    if (!s) {
      s = { name, where: shortUrl(url, lineNumber), area: areaOf(name, url), idle: name === '(idle)' || name === '(program)', us: 0 }
      out.set(key, s)
    }
    s.us += profile.timeDeltas[i] ?? 0
  })
  return out
}

function shortUrl (url, line) {
  if (!url) return ''
  const m = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url)
  return `${m ? `${m[1]}/${m[2]}` : url.replace(/^file:\/\/.*\/packages\//, 'packages/')}:${line + 1}`
}

function areaOf (name, url) {
  if (name === '(garbage collector)') return 'garbage collection'
  if (url.includes('/packages/') && !url.includes('node_modules')) return 'Spindle'
  if (/node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?(fastify|@fastify|find-my-way|light-my-request|avvio|fast-json-stringify|pino)/.test(url)) return 'Fastify'
  if (/node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?(next|react|react-dom|react-router|@react-router|scheduler)\//.test(url)) return 'framework'
  if (url.startsWith('node:_http') || url.startsWith('node:http') || url.startsWith('node:net') || url.startsWith('node:internal/http')) return 'node:http/net'
  if (url.startsWith('node:internal/streams') || url.startsWith('node:stream')) return 'node streams'
  if (url.startsWith('node:')) return 'node (other)'
  if (!url) return name.startsWith('(') ? name : 'native'
  return 'other packages'
}
