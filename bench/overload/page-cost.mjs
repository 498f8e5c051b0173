// What a served page costs the server in CPU under three load shapes, on one Spindle server
// of the Next.js example (2 workers, shedding on): a closed loop of 16 connections (how
// goals.mjs reads the capacity), an open loop at 0.9x of that capacity, and an open loop at
// 3x. Tells apart what an overload costs (the 503s, the admission) from what the open
// loop's shape costs (128 connections, requests that arrive one by one).
//   node bench/overload/page-cost.mjs [--rounds 3] [--duration 5]
// Each round reads the capacity first, then loads 0.9x and 3x of it; prints per level the
// pages served a second, the server's CPU (its process tree: threads and the kernel's
// socket work) per page, the cores it used and the 503s, then the medians over the rounds.
import { benchArgs, wholeArg } from '../lib/args.mjs'
import { closedLoop } from '../lib/closed-loop.mjs'
import { openLoop } from '../lib/open-loop.mjs'
import { median } from '../lib/stats.mjs'
import { headers, startSpindle, url, warmUp, withCores } from './sequence.mjs'

const { values } = benchArgs({ options: { rounds: { type: 'string', default: '3' }, duration: { type: 'string', default: '5' } } })
const rounds = wholeArg(values, 'rounds', 1)
const duration = wholeArg(values, 'duration', 2)

/** Pages a second, CPU ms per page, cores and 503s of one level; `run` resolves to { pages, status503 }. */
async function level (server, run) {
  const { value: { pages, status503 }, server: cores, seconds } = await withCores(server, run)
  // The server's CPU over the level: its cores times the level's own length.
  return { rate: pages / duration, msPerPage: (cores * seconds * 1000) / pages, cores: (cores * seconds) / duration, status503 }
}

const show = (l) => `${l.rate.toFixed(0)}/s, ${l.msPerPage.toFixed(1)} ms a page, ${l.cores.toFixed(2)} cores, ${l.status503} 503s`
const server = await startSpindle({ shedding: 'on' })
const levels = { closed: [], near: [], over: [] }
try {
  const first = (await closedLoop({ url, connections: 16, duration, headers })).rps
  await warmUp(first, duration)
  for (let r = 1; r <= rounds; r++) {
    const closed = await level(server, async () => {
      const res = await closedLoop({ url, connections: 16, duration, headers })
      return { pages: res.rps * duration, status503: 0 }
    })
    const open = (factor) => level(server, async () => {
      const res = await openLoop({ url, rate: Math.round(closed.rate * factor), duration, headers })
      return { pages: res.goodput * duration, status503: res.status503 }
    })
    const near = await open(0.9)
    const over = await open(3)
    levels.closed.push(closed); levels.near.push(near); levels.over.push(over)
    console.log(`round ${r}: closed loop ${show(closed)} | 0.9x ${show(near)} | 3x ${show(over)}`)
  }
} finally { await server.stop() }
const med = (list, key) => median(list.map((l) => l[key])).toFixed(1)
console.log(`medians, ms of CPU a page: closed loop ${med(levels.closed, 'msPerPage')}, 0.9x ${med(levels.near, 'msPerPage')}, 3x ${med(levels.over, 'msPerPage')}; ` +
  `3x served ${(median(levels.over.map((l, i) => l.rate / levels.closed[i].rate)) * 100).toFixed(0)} % of the closed loop's pages`)
