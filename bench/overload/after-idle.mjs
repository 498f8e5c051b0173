// A surge after a quiet spell, with and without V8's memory reducer in the workers: two
// servers of the Next.js example on Spindle (2 workers, shedding on), one with the default
// (`memoryReducer: false`), one with `memoryReducer: true`, both warmed up, then for each of
// --cycles: both idle for --idle seconds, then each takes --duration s of open-loop load at
// --rate req/s (which goes first alternates), or, with --closed, a closed loop of 16
// connections. Prints each cycle and the totals.
//   node bench/overload/after-idle.mjs --rate 90 [--idle 12] [--duration 4] [--cycles 8] [--closed]
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { wholeArg } from '../lib/args.mjs'
import { openLoop } from '../lib/open-loop.mjs'
import { closedLoop } from '../lib/closed-loop.mjs'
import { port, urlAt, headers, startSpindle } from './sequence.mjs'

const { values } = parseArgs({
  options: {
    rate: { type: 'string' },
    idle: { type: 'string', default: '12' },
    duration: { type: 'string', default: '4' },
    cycles: { type: 'string', default: '8' },
    closed: { type: 'boolean', default: false },
  },
})
const rate = wholeArg(values, 'rate', 1)
const idle = wholeArg(values, 'idle', 0)
const duration = wholeArg(values, 'duration', 1)
const cycles = wholeArg(values, 'cycles', 1)

const targets = [
  { name: 'default', port, serve: {} },
  { name: 'memoryReducer', port: port + 1, serve: { memoryReducer: true } },
].map((t) => ({ ...t, url: urlAt(t.port), runs: [] }))
const servers = []
try {
  for (const t of targets) servers.push(await startSpindle({ p: t.port, serveOptions: t.serve }))
  for (const t of targets) await openLoop({ url: t.url, rate: Math.ceil(rate / 2), duration: 10, headers })
  const load = async (t) => values.closed
    ? { goodput: (await closedLoop({ url: t.url, connections: 16, duration, headers })).rps }
    : await openLoop({ url: t.url, rate, duration, headers })
  const show = (r) => (values.closed ? `${Math.round(r.goodput)} req/s` : `${r.status503} of ${r.sent} shed, 2xx p99 ${Math.round(r.latency2xx.p99)} ms, goodput ${Math.round(r.goodput)}/s, timeouts ${r.timeouts}`)
  console.log(`${cycles} cycles: ${idle} s idle, then ${duration} s of ${values.closed ? 'closed-loop load (16 connections)' : `${rate} req/s`} on each server in turn`)
  for (let i = 0; i < cycles; i++) {
    await sleep(idle * 1000)
    for (const t of i % 2 ? [...targets].reverse() : targets) t.runs.push(await load(t))
    console.log(`cycle ${i + 1}: ` + targets.map((t) => `${t.name}: ${show(t.runs.at(-1))}`).join(' | '))
  }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
  for (const t of targets) {
    console.log(values.closed
      ? `${t.name}: mean ${Math.round(mean(t.runs.map((r) => r.goodput)))} req/s`
      : `${t.name}: ${t.runs.reduce((n, r) => n + r.status503, 0)} of ${t.runs.reduce((n, r) => n + r.sent, 0)} shed, mean 2xx p99 ${Math.round(mean(t.runs.map((r) => r.latency2xx.p99)))} ms, mean goodput ${Math.round(mean(t.runs.map((r) => r.goodput)))}/s`)
  }
  const better = targets[0].runs.filter((r, i) => r.goodput > targets[1].runs[i].goodput).length
  console.log(`default served more in ${better} of ${cycles} cycles`)
} finally {
  for (const s of servers) await s.stop()
}
