// What sending a request to a pool thread costs, against rendering it in the thread that runs
// Fastify: the example's app in one plain Fastify process (the `adapter` configuration) with
// `threads: 0` and with `threads: N` (`adapter-pool`, SPINDLE_POOL_THREADS=N), each client
// connection (one by default) sending one request after another, rounds alternating. For each path: latency
// (p50, mean) and CPU per request, of the main thread and of the whole process, from
// /proc/<pid>/task/<pid>/stat and /proc/<pid>/stat (Linux). Pool minus in-thread is the
// dispatch overhead. Then, in one more pool run with bench/lib/count-posts.mjs preloaded
// (every thread counts what it posts on MessagePorts; this slows the posts, so nothing is
// timed in it), the messages and bytes each request sends across the threads, by kind.
//
//   node bench/pool-dispatch.mjs [--workload react-router|next] [--paths /products/1,/] [--threads 1]
//        [--connections 1] [--rounds 3] [--duration 5] [--count 500]
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Pool } from 'undici'
import { benchArgs, wholeArg } from './lib/args.mjs'
import { startServer, waitPortFree } from './lib/processes.mjs'
import { median, percentile } from './lib/stats.mjs'
import { workloads } from './lib/workloads.mjs'

/** A small response and the workload's typical page, for each workload with an adapter. */
const DEFAULT_PATHS = { 'react-router': '/products/1,/', next: '/api/hello,/dynamic' }

const { values } = benchArgs({
  options: {
    workload: { type: 'string', default: 'react-router' },
    paths: { type: 'string' },
    threads: { type: 'string', default: '1' },
    connections: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    count: { type: 'string', default: '500' },
    port: { type: 'string', default: '3994' },
  },
})
const wl = workloads[values.workload]
if (!wl || !DEFAULT_PATHS[values.workload]) throw new Error(`--workload must be one of ${Object.keys(DEFAULT_PATHS).join(', ')}, got ${JSON.stringify(values.workload)}`)
const missing = wl.prepare()
if (missing) throw new Error(missing)
const threads = wholeArg(values, 'threads', 1)
const connections = wholeArg(values, 'connections', 1)
const rounds = wholeArg(values, 'rounds', 1)
const duration = wholeArg(values, 'duration', 1)
const count = wholeArg(values, 'count', 1)
const port = wholeArg(values, 'port', 1)
const paths = (values.paths ?? DEFAULT_PATHS[values.workload]).split(',')
const workDir = fileURLToPath(new URL('./.work', import.meta.url))
const origin = `http://127.0.0.1:${port}`
const TICK = 100 // USER_HZ on Linux
const CONFIGS = { 'in-thread': 'adapter', pool: 'adapter-pool' }

/** CPU seconds (user + system) of a /proc stat file. */
function cpu (file) {
  const stat = readFileSync(file, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / TICK
}

async function start (config, extra = {}) {
  const spec = wl.launch(CONFIGS[config], { workers: threads, port, workDir })
  if (spec.unavailable) throw new Error(spec.unavailable)
  await waitPortFree(port)
  return startServer({ ...spec, args: [...(extra.args ?? []), ...spec.args], env: { ...spec.env, ...extra.env }, readyUrl: origin + paths[0], headers: wl.headers })
}

/** One request after another on each of `connections`, for `seconds`; latencies in µs, ascending. */
async function load (client, path, seconds) {
  const each = await Promise.all(Array.from({ length: connections }, () => sequential(client, path, { seconds })))
  return each.flat().sort((a, b) => a - b)
}

/** One request after another on one connection, for `seconds` or `n` requests. */
async function sequential (client, path, { seconds, n }) {
  const latencies = []
  const until = performance.now() + (seconds ?? Infinity) * 1000
  while (performance.now() < until && latencies.length < (n ?? Infinity)) {
    const t0 = performance.now()
    const res = await client.request({ method: 'GET', path, headers: wl.headers })
    await res.body.arrayBuffer()
    if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}`)
    latencies.push((performance.now() - t0) * 1000)
  }
  return latencies
}

/** Latency and CPU per request of each path, in one server. */
async function measure (config) {
  const server = await start(config)
  const client = new Pool(origin, { connections })
  try {
    const out = {}
    for (const path of paths) {
      await load(client, path, 2)
      const main0 = cpu(`/proc/${server.pid}/task/${server.pid}/stat`)
      const all0 = cpu(`/proc/${server.pid}/stat`)
      const latencies = await load(client, path, duration)
      const main = cpu(`/proc/${server.pid}/task/${server.pid}/stat`) - main0
      const all = cpu(`/proc/${server.pid}/stat`) - all0
      out[path] = {
        rps: latencies.length / duration,
        p50: percentile(latencies, 50),
        mean: latencies.reduce((a, b) => a + b, 0) / latencies.length,
        mainCpu: 1e6 * main / latencies.length,
        processCpu: 1e6 * all / latencies.length,
      }
    }
    return out
  } finally {
    await client.close()
    await server.stop()
  }
}

/** Posted messages and bytes per request of each path, by kind, in a pool server. */
async function countPosts () {
  const dir = `${workDir}/posts`
  const totals = () => {
    const sum = {}
    for (const file of readdirSync(dir)) {
      if (!file.endsWith('.json')) continue
      const thread = file === '0.json' ? 'main → pool' : 'pool → main'
      for (const [kind, t] of Object.entries(JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')))) {
        const s = sum[`${thread}\0${kind}`] ??= { messages: 0, cloned: 0, moved: 0 }
        s.messages += t.messages; s.cloned += t.cloned; s.moved += t.moved
      }
    }
    return sum
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300))
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const preload = fileURLToPath(new URL('./lib/count-posts.mjs', import.meta.url))
  const server = await start('pool', { args: ['--import', preload], env: { SPINDLE_POOL_THREADS: String(threads), SPINDLE_BENCH_POSTS: dir } })
  const client = new Pool(origin, { connections: 1 })
  try {
    const out = {}
    for (const path of paths) {
      await sequential(client, path, { n: 20 })
      await settle()
      const before = totals()
      await sequential(client, path, { n: count })
      await settle()
      const after = totals()
      out[path] = Object.entries(after).map(([key, a]) => {
        const b = before[key] ?? { messages: 0, cloned: 0, moved: 0 }
        const [direction, kind] = key.split('\0')
        return { direction, kind, messages: (a.messages - b.messages) / count, cloned: (a.cloned - b.cloned) / count, moved: (a.moved - b.moved) / count }
      }).filter((r) => r.messages > 0)
    }
    return out
  } finally {
    await client.close()
    await server.stop()
  }
}

const runs = { 'in-thread': [], pool: [] }
for (let r = 0; r < rounds; r++) {
  for (const config of Object.keys(runs)) {
    runs[config].push(await measure(config))
    process.stderr.write(`round ${r + 1}/${rounds} ${config} done\n`)
  }
}
const posts = await countPosts()

const us = (n) => n.toFixed(0)
console.log(`# Pool dispatch: ${values.workload}, threads: ${threads} against threads: 0, ${connections} connection(s) each sending one request after another, ${rounds} rounds of ${duration} s per path (medians)\n`)
for (const path of paths) {
  const row = (config) => {
    const of = (f) => median(runs[config].map((run) => run[path][f]))
    return { rps: of('rps'), p50: of('p50'), mean: of('mean'), mainCpu: of('mainCpu'), processCpu: of('processCpu') }
  }
  const a = row('in-thread')
  const b = row('pool')
  console.log(`## ${path}\n`)
  console.log('| | req/s | p50 µs | mean µs | main thread CPU µs/req | process CPU µs/req |')
  console.log('|---|---|---|---|---|---|')
  console.log(`| threads: 0 (in-thread) | ${us(a.rps)} | ${us(a.p50)} | ${us(a.mean)} | ${us(a.mainCpu)} | ${us(a.processCpu)} |`)
  console.log(`| threads: ${threads} (pool) | ${us(b.rps)} | ${us(b.p50)} | ${us(b.mean)} | ${us(b.mainCpu)} | ${us(b.processCpu)} |`)
  console.log(`| pool − in-thread | | ${us(b.p50 - a.p50)} | ${us(b.mean - a.mean)} | ${us(b.mainCpu - a.mainCpu)} | ${us(b.processCpu - a.processCpu)} |\n`)
  const kinds = posts[path]
  console.log(`Posted per request (pool, ${count} requests): cloned = bytes the structured clone copied, moved = bytes of transferred ArrayBuffers\n`)
  console.log('| direction | message | messages | cloned bytes | moved bytes |')
  console.log('|---|---|---|---|---|')
  for (const k of kinds) console.log(`| ${k.direction} | ${k.kind} | ${k.messages.toFixed(2)} | ${us(k.cloned)} | ${us(k.moved)} |`)
  const sum = (f) => kinds.reduce((n, k) => n + k[f], 0)
  console.log(`| all | | ${sum('messages').toFixed(2)} | ${us(sum('cloned'))} | ${us(sum('moved'))} |\n`)
}
