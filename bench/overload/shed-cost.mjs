// What a shed answer costs against a render, in CPU time of the server's process tree (its
// threads and the kernel's work on its sockets), on the Next.js example with 2 workers:
//   node bench/overload/shed-cost.mjs [--rounds 3] [--duration 5]
// Three servers run side by side, each loaded in turn by a closed loop of 16 connections
// (rounds alternate, so a slow spell of the machine falls on all three):
// - shedding off: CPU per page at capacity;
// - shedding on (the defaults): CPU per page at capacity, so the admission's own cost (two
//   renders at a time, its bookkeeping) shows against the first;
// - shedding on, made to shed every render (`maxEventLoopUtilization` of 0.0001, armed two
//   sample intervals after start, and `retryHold: 0` so the 503s go out at once): CPU per 503.
// Prints each round and the medians, and the ratio of a page's CPU to a 503's.
import { setTimeout as sleep } from 'node:timers/promises'
import { benchArgs, wholeArg } from '../lib/args.mjs'
import { closedLoop } from '../lib/closed-loop.mjs'
import { treeCpuSeconds } from '../lib/processes.mjs'
import { median } from '../lib/stats.mjs'
import { headers, port, startSpindle, urlAt } from './sequence.mjs'

const { values } = benchArgs({ options: { rounds: { type: 'string', default: '3' }, duration: { type: 'string', default: '5' } } })
const rounds = wholeArg(values, 'rounds', 1)
const duration = wholeArg(values, 'duration', 2)
/** The shedding thresholds are judged from two of these after the server listens: time to answer the readiness check first. */
const SAMPLE_INTERVAL = 4000

/** Server CPU per answer (µs) of each kind over one closed loop on `p`. */
async function measure (server, p) {
  const cpu = treeCpuSeconds(server.pid)
  const r = await closedLoop({ url: urlAt(p), connections: 16, duration, headers })
  const used = treeCpuSeconds(server.pid) - cpu
  return { ok: r.ok, other: r.total - r.ok, usPerAnswer: (used * 1e6) / r.total, cores: used / duration }
}

const targets = [
  { name: 'shedding off', p: port + 1, start: () => startSpindle({ p: port + 1, shedding: 'off' }) },
  { name: 'shedding on', p: port, start: () => startSpindle({ p: port, shedding: 'on' }) },
  {
    name: 'every render shed',
    p: port + 2,
    start: () => startSpindle({
      p: port + 2,
      shedding: 'on',
      shedOptions: { maxEventLoopUtilization: 0.0001, sampleInterval: SAMPLE_INTERVAL, retryHold: 0 },
    }),
  },
]
const servers = []
try {
  for (const t of targets) servers.push(await t.start())
  console.log(`warming up (${duration} s each), then ${rounds} rounds of ${duration} s per server, 16 connections`)
  for (const t of targets) await closedLoop({ url: urlAt(t.p), connections: 16, duration, headers })
  // The third server sheds once its thresholds are armed.
  for (let i = 0; i < 40; i++) {
    const r = await fetch(urlAt(targets[2].p), { headers })
    await r.arrayBuffer()
    if (r.status === 503) break
    await sleep(250)
  }
  const seen = targets.map(() => [])
  for (let round = 1; round <= rounds; round++) {
    const line = []
    for (const [i, t] of targets.entries()) {
      const m = await measure(servers[i], t.p)
      seen[i].push(m)
      line.push(`${t.name}: ${m.ok} 2xx, ${m.other} other, ${Math.round(m.usPerAnswer)} µs per answer, ${m.cores.toFixed(2)} cores`)
    }
    console.log(`round ${round}: ${line.join(' | ')}`)
  }
  const us = seen.map((list) => median(list.map((m) => m.usPerAnswer)))
  if (seen[2].some((m) => m.ok > 0)) console.log('note: the shedding server answered some renders; its figure mixes pages and 503s')
  console.log(`medians: a page ${(us[0] / 1000).toFixed(2)} ms of CPU with shedding off, ${(us[1] / 1000).toFixed(2)} ms with it on (${(us[1] / us[0]).toFixed(3)}x); a 503 ${Math.round(us[2])} µs, 1/${Math.round(us[0] / us[2])} of a page`)
} finally {
  for (const s of servers) await s.stop()
}
