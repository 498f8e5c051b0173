// Every request of the overload benchmark's sequence, timed, against one Spindle server:
// what run.mjs reports as percentiles, broken down by when each request was sent, so the
// onset of an overload can be told from its steady state, and admission settings can be
// compared in alternated runs.
//   node bench/overload/trace.mjs --capacity 140 [--label run] [--out file.json] [--shedding off] [--node-flags='--no-concurrent-marking']
// SHED_OPTIONS='{"maxBacklog":50}' is passed on to the server (see spindle.mjs); --node-flags=
// starts the server's Node.js with these flags (V8's garbage-collection switches, say).
// It warms the server up (10 s at 0.5x), then sends 0.2x, 0.8x, 1.5x and 3x of the capacity
// for 5 s each with 3 s pauses, as run.mjs does, and prints a line per level; --out writes
// each request as [sent at ms, latency ms, status (0: no answer), X-Spindle-Shed].
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { openLoop } from '../lib/open-loop.mjs'
import { percentile } from '../lib/stats.mjs'
import { port, url, headers, warmUp, unloadedLevel, levels, betweenLevels, startSpindle, controlPortAt } from './sequence.mjs'

const { values } = parseArgs({
  options: {
    capacity: { type: 'string' },
    label: { type: 'string', default: 'run' },
    out: { type: 'string' },
    shedding: { type: 'string', default: 'on' },
    'node-flags': { type: 'string', default: '' },
  },
})
const capacity = Number(values.capacity)
if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`--capacity must be a whole number of req/s of at least 1, got ${JSON.stringify(values.capacity)}`)
if (values.shedding !== 'on' && values.shedding !== 'off') throw new Error(`--shedding must be on or off, got ${JSON.stringify(values.shedding)}`)

const controlPort = controlPortAt(port)
const duration = 5
const ms = (sorted, p) => (sorted.length ? Math.round(percentile(sorted, p)) : '-')
const sortedMs = (records) => records.map((r) => r.ms).sort((a, b) => a - b)

const server = await startSpindle({ shedding: values.shedding, nodeFlags: values['node-flags'].split(/\s+/).filter(Boolean) })
const trace = {}
try {
  console.log(`${values.label}: warming up for 10 s`)
  await warmUp(capacity)
  for (const level of [unloadedLevel, ...levels]) {
    const records = []
    // Each worker's event-loop utilization as the supervisor sees it, every 250 ms.
    const elu = []
    const poll = setInterval(() => {
      fetch(`http://127.0.0.1:${controlPort}/status`).then((r) => r.json())
        .then((s) => s.workers.forEach((w, i) => (elu[i] ??= []).push(w.elu)), () => {})
    }, 250)
    const r = await openLoop({ url, rate: Math.round(capacity * level), duration, headers, record: (one) => records.push(one) })
    clearInterval(poll)
    trace[level] = records.map((one) => [Math.round(one.at * 10) / 10, Math.round(one.ms * 10) / 10, one.status, one.shed])
    const ok = records.filter((one) => one.status >= 200 && one.status < 300)
    const okMs = sortedMs(ok)
    const shed = records.filter((one) => one.status === 503)
    const reasons = {}
    for (const one of shed) reasons[one.shed] = (reasons[one.shed] ?? 0) + 1
    const meanElu = elu.map((xs) => (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)).join(' / ') || '-'
    console.log(`${values.label} ${level}x: goodput ${Math.round(r.goodput)}/s, 2xx p50 ${ms(okMs, 50)} p99 ${ms(okMs, 99)} ms` +
      ` (sent after the first second: p99 ${ms(sortedMs(ok.filter((one) => one.at >= 1000)), 99)} ms),` +
      ` 503s ${shed.length} ${JSON.stringify(reasons)} p99 ${ms(sortedMs(shed), 99)} ms, timeouts ${r.timeouts}, ELU by worker ${meanElu}`)
    if (level !== unloadedLevel && level !== levels.at(-1)) await sleep(betweenLevels)
  }
} finally {
  await server.stop()
}
if (values.out) writeFileSync(values.out, JSON.stringify(trace) + '\n')
