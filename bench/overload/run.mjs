// Overload benchmark: the Next.js example's dynamic SSR page under open-loop load at 0.8x,
// 1.5x and 3x of its measured capacity, on Spindle (2 workers) with and without load
// shedding, on `next start` (one process) and on PM2 (cluster mode, 2 instances).
//   node bench/overload/run.mjs [--duration 8] [--rounds 3] [--warmup 10] [--capacity N] [--only spindle,spindle-noshed,next-start,pm2]
// --capacity skips the closed-loop measurement and takes N req/s as the capacity, so runs on
// one machine can be compared at the same offered loads.
// Each round starts every target in turn, warms it up (JIT, caches) and runs all levels; the
// round with the median goodput is reported next to the range of goodput over all rounds: on
// a shared 2-core machine one round can be 30 % off.
import { writeFileSync, mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRequire } from 'node:module'
import { startServer } from '../lib/processes.mjs'
import { openLoop as constantArrivalRate } from '../lib/open-loop.mjs'
import { port, url, headers, warmUp, unloadedLevel, levels, betweenLevels, closedLoopCapacity } from './sequence.mjs'

const tenth = (x) => (x == null || Number.isNaN(x) ? null : Math.round(x * 10) / 10)

/** The shared generator, with durations in ms and the latency summaries this report prints. */
async function openLoop ({ duration, ...options }) {
  const r = await constantArrivalRate({ ...options, duration: duration / 1000 })
  const pick = (l) => ({ p50: tenth(l.p50), p95: tenth(l.p95), p99: tenth(l.p99) })
  return {
    sent: r.sent, timeouts: r.timeouts, errors: r.errors, dropped: r.dropped,
    goodput: Math.round(r.goodput), successPct: tenth(r.successPct),
    ok: { count: r.ok, ...pick(r.latency2xx) }, shed: { count: r.status503, ...pick(r.latency503) },
    generatorLagP99: tenth(r.generatorLagP99),
  }
}

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '10' },
    capacity: { type: 'string' },
    only: { type: 'string' },
  },
})
const duration = Number(values.duration) * 1000
const rounds = Number(values.rounds)
const warmup = Number(values.warmup) * 1000
for (const [name, v, min] of [['duration', duration, 1], ['rounds', rounds, 1], ['warmup', warmup, 0]]) {
  if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(values[name])}`)
}
const here = fileURLToPath(new URL('.', import.meta.url))
const nextDir = fileURLToPath(new URL('../../examples/next/', import.meta.url))
const nextBin = createRequire(nextDir + 'package.json').resolve('next/dist/bin/next')
const node = process.execPath

const targets = {
  spindle: { command: node, args: [here + 'spindle.mjs'], env: { SHEDDING: 'on' } },
  'spindle-noshed': { command: node, args: [here + 'spindle.mjs'], env: { SHEDDING: 'off' } },
  'next-start': { command: node, args: [nextBin, 'start', '-p', String(port), '-H', '127.0.0.1'], cwd: nextDir },
  pm2: {
    command: node,
    args: [fileURLToPath(new URL('../apps/pm2.mjs', import.meta.url))],
    cwd: nextDir,
    env: { PM2_BENCH: JSON.stringify({ instances: 2, script: nextBin, args: ['start', '-p', String(port), '-H', '127.0.0.1'] }) },
  },
}
const names = values.only ? values.only.split(',') : Object.keys(targets)

async function withServer (name, fn) {
  const t = targets[name]
  const server = await startServer({ command: t.command, args: t.args, cwd: t.cwd ?? here, env: { PORT: String(port), ...t.env }, readyUrl: url, headers })
  try { return await fn() } finally { await server.stop() }
}

// Capacity: closed loop against Spindle without shedding (what 2 workers render flat out).
const capacitySource = values.capacity !== undefined ? 'given with --capacity' : 'closed loop, Spindle 2 workers, shedding off'
if (values.capacity !== undefined && !(Number.isInteger(Number(values.capacity)) && Number(values.capacity) >= 1)) {
  throw new Error(`--capacity must be a whole number of req/s of at least 1, got ${JSON.stringify(values.capacity)}`)
}
const capacity = values.capacity !== undefined
  ? Number(values.capacity)
  : await withServer('spindle-noshed', () => closedLoopCapacity(Math.max(3, warmup / 1000), duration / 1000))
console.log(`capacity (${capacitySource}): ${capacity} req/s`)

// Rounds go over the targets in turn, each with a server started and warmed up afresh:
// the machine's speed drifts by tens of percent within minutes, and this way a slow stretch
// falls on one round of every target rather than on all rounds of one target.
const results = new Map(names.map((name) => [name, { unloaded: [], runs: new Map(levels.map((x) => [x, []])) }]))
for (let round = 1; round <= rounds; round++) {
  for (const name of names) {
    const mine = results.get(name)
    await withServer(name, async () => {
      console.log(`${name} round ${round}/${rounds}: warming up for ${warmup / 1000} s`)
      await warmUp(capacity, warmup)
      mine.unloaded.push(await openLoop({ url, rate: Math.max(1, Math.round(capacity * unloadedLevel)), duration: Math.min(duration, 5000), headers }))
      for (const x of levels) {
        const r = await openLoop({ url, rate: Math.round(capacity * x), duration, headers })
        mine.runs.get(x).push(r)
        console.log(`${name} ${x}x round ${round}/${rounds}: goodput ${r.goodput}/s, 503s ${r.shed.count}, timeouts ${r.timeouts}`)
        // Let the previous level's backlog clear before the next one.
        await sleep(betweenLevels)
      }
    })
  }
}

/** The middle element of a sorted array (the lower of the two middle ones for an even length). */
const middle = (sorted) => sorted[Math.floor((sorted.length - 1) / 2)]
const rows = []
for (const name of names) {
  const { unloaded, runs } = results.get(name)
  const unloadedP99 = middle(unloaded.map((u) => u.ok.p99).sort((a, b) => a - b))
  for (const x of levels) {
    const all = runs.get(x).sort((a, b) => a.goodput - b.goodput)
    const r = middle(all)
    const sum = (f) => all.reduce((n, one) => n + f(one), 0)
    rows.push({
      target: name, load: `${x}x`, ...r, unloadedP99,
      goodputPctOfCapacity: Math.round((100 * r.goodput) / capacity),
      goodputRange: [all[0].goodput, all.at(-1).goodput],
      allRounds: { timeouts: sum((one) => one.timeouts), shed: sum((one) => one.shed.count), sent: sum((one) => one.sent) },
    })
  }
}

const table = [
  `capacity: ${capacity} req/s (${capacitySource}); ${duration / 1000} s per level, ${rounds} rounds over the targets in turn, ${warmup / 1000} s warm-up per server and round`,
  'Each row is the round with the median goodput; "range" is goodput over all rounds, "timeouts (all)" and "503s (all)" count every round; "unloaded p99" is the median over the rounds (at 0.2x).',
  '',
  '| target | load | goodput/s | range | % of capacity | success % | 2xx p50 / p95 / p99 ms | unloaded p99 | 503s | 503 p50 / p99 ms | timeouts | timeouts (all) | 503s (all) / sent (all) | generator lag p99 ms |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.target} | ${r.load} | ${r.goodput} | ${r.goodputRange.join('–')} | ${r.goodputPctOfCapacity} | ${r.successPct} | ${r.ok.p50} / ${r.ok.p95} / ${r.ok.p99} | ${r.unloadedP99} | ${r.shed.count} | ${r.shed.p50 ?? '-'} / ${r.shed.p99 ?? '-'} | ${r.timeouts} | ${r.allRounds.timeouts} | ${r.allRounds.shed} / ${r.allRounds.sent} | ${r.generatorLagP99} |`),
]
console.log('\n' + table.join('\n'))
mkdirSync(here + 'results', { recursive: true })
writeFileSync(here + 'results/latest.md', table.join('\n') + '\n')
writeFileSync(here + 'results/latest.json', JSON.stringify({ capacity, rows }, null, 2) + '\n')
