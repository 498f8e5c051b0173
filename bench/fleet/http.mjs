// The fleet tier end to end on examples/next (/cached: a page around a 'use cache'
// component tagged `demo`), with `spindle start` x 2 workers against a real redis-server:
//  1. hit latency of /cached with the fleet tier on against memory-only (no URL), closed
//     loop, alternating rounds;
//  2. renders per page across 2 processes under load, with a revalidation every window;
//  3. time from revalidateTag on one process to fresh HTML on the other.
// Usage (hold the bench lock; build the example first):
//   flock /work/wt/bench.lock node bench/fleet/http.mjs [--rounds 2] [--duration 8]
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { request } from 'undici'
import { closedLoop } from '../lib/closed-loop.mjs'
import { startServer } from '../lib/processes.mjs'
import { median, percentile } from '../lib/stats.mjs'
import { startRedis } from './redis.mjs'

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '2' }, duration: { type: 'string', default: '8' } } })
const rounds = Number(values.rounds)
const duration = Number(values.duration)
const app = fileURLToPath(new URL('../../examples/next/', import.meta.url))
const cli = join(dirname(createRequire(join(app, 'package.json')).resolve('@spindle/runtime/package.json')), 'dist/cli.js')

async function spindle (port, controlPort, cacheUrl) {
  const env = { WORKERS: '2', PORT: String(port), HOST: '127.0.0.1', SPINDLE_CONTROL_PORT: String(controlPort) }
  if (cacheUrl) env.SPINDLE_CACHE_URL = cacheUrl
  const server = await startServer({ command: process.execPath, args: [cli, 'start'], cwd: app, env, readyUrl: `http://127.0.0.1:${port}/cached` })
  return { ...server, url: `http://127.0.0.1:${port}` }
}

const statuses = {}

async function renderId (base) {
  const res = await request(`${base}/cached`)
  const html = await res.body.text()
  statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
  return /data-render-id="([^"]+)"/.exec(html)?.[1]
}

async function revalidate (base) {
  const res = await request(`${base}/api/revalidate?tag=demo`, { method: 'POST' })
  await res.body.dump()
}

const redis = await startRedis()
const servers = []
try {
  const memoryOnly = await spindle(3310, 9310)
  servers.push(memoryOnly)
  const a = await spindle(3311, 9311, redis.url)
  servers.push(a)
  const b = await spindle(3312, 9312, redis.url)
  servers.push(b)

  // 1. Hit latency: the entry is in shared memory (warmed), so this is the cost of the tier on a hit.
  for (const s of [memoryOnly, a]) for (let i = 0; i < 20; i++) await renderId(s.url)
  const rows = { memory: [], fleet: [] }
  for (let r = 0; r < rounds; r++) {
    rows.memory.push(await closedLoop({ url: `${memoryOnly.url}/cached`, connections: 2, duration }))
    rows.fleet.push(await closedLoop({ url: `${a.url}/cached`, connections: 2, duration }))
  }
  const pick = (list, k) => median(list.map((x) => x[k]))
  console.log('\n1. /cached hit latency, 1 process x 2 workers, 2 connections (below saturation), closed loop, median of rounds')
  console.log('| | 2xx req/s | p50 ms | p99 ms | 2xx % |\n|---|---|---|---|---|')
  for (const [name, list] of [['memory only', rows.memory], ['fleet tier on', rows.fleet]]) console.log(`| ${name} | ${Math.round(pick(list, 'rps'))} | ${pick(list, 'p50').toFixed(1)} | ${pick(list, 'p99').toFixed(1)} | ${pick(list, 'successPct').toFixed(1)} |`)
  console.log(`fleet / memory: req/s ${(pick(rows.fleet, 'rps') / pick(rows.memory, 'rps')).toFixed(3)}, p50 ${(pick(rows.fleet, 'p50') / pick(rows.memory, 'p50')).toFixed(3)}`)
  await memoryOnly.stop()
  servers.shift()

  // 2. Renders per page across the two processes under load, one revalidation per window.
  const windows = 4
  const windowMs = 3000
  const seen = new Set()
  let served = 0
  let failed = 0
  const end = Date.now() + windows * windowMs
  const loops = Array.from({ length: 8 }, async (_, i) => {
    while (Date.now() < end) {
      try {
        const id = await renderId(i % 2 === 0 ? a.url : b.url)
        if (id) { seen.add(id); served++ } else failed++
      } catch { failed++ }
    }
  })
  for (let w = 1; w < windows; w++) {
    await sleep(windowMs)
    await revalidate(w % 2 === 0 ? a.url : b.url)
  }
  await Promise.all(loops)
  console.log(`\n2. renders of /cached across 2 processes x 2 workers under load (8 concurrent clients, ${windows} windows of ${windowMs / 1000} s, one revalidation between windows): ${seen.size} renders for ${windows} windows = ${(seen.size / windows).toFixed(2)} per window; ${served} responses with a render id, ${failed} without (statuses ${JSON.stringify(statuses)})`)

  // 3. Revalidation on one process to fresh HTML on the other.
  const times = []
  for (let i = 0; i < 40; i++) {
    const [from, to] = i % 2 === 0 ? [a, b] : [b, a]
    const before = await renderId(to.url)
    const start = performance.now()
    await revalidate(from.url)
    while (await renderId(to.url) === before) {
      if (performance.now() - start > 5000) break
    }
    times.push(performance.now() - start)
  }
  times.sort((x, y) => x - y)
  console.log(`\n3. revalidateTag on one process to fresh HTML on the other (40 runs, both directions): median ${percentile(times, 50).toFixed(1)} ms, p99 ${percentile(times, 99).toFixed(1)} ms, max ${times.at(-1).toFixed(1)} ms`)
} finally {
  for (const s of servers) await s.stop()
  await redis.stop()
}
