// The overload goals checked against the capacity of the moment rather than one measured at
// the start of a long run: the machine's speed drifts by tens of percent within minutes, so
// "0.8x" of an old measure can be full load now.
//   node bench/overload/goals.mjs [--runs 4] [--duration 5]
// Each run measures the closed-loop capacity of Spindle with 2 workers and shedding off, then
// starts a fresh server with shedding on, warms it up and loads it at 0.8x and 3x of that
// capacity, and prints one line: what was shed at 0.8x, and goodput (as a share of the
// capacity), 2xx and 503 p99 and timeouts at 3x; at the end, in how many runs each goal of
// docs/overload.md was met.
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { startServer } from '../lib/processes.mjs'
import { closedLoop } from '../lib/closed-loop.mjs'
import { openLoop } from '../lib/open-loop.mjs'
import { port, url, headers, warmupLevel, afterWarmup, unloadedLevel, betweenLevels } from './sequence.mjs'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '4' }, duration: { type: 'string', default: '5' } } })
const whole = (name, min) => {
  const n = Number(values[name])
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(values[name])}`)
  return n
}
const runs = whole('runs', 1)
const duration = whole('duration', 2)
const here = fileURLToPath(new URL('.', import.meta.url))
const start = (shedding) => startServer({ command: process.execPath, args: [here + 'spindle.mjs'], cwd: here, env: { PORT: String(port), SHEDDING: shedding }, readyUrl: url, headers })
const ms = (x) => (Number.isFinite(x) ? Math.round(x) : '-')
// Each goal, and in how many runs it was met.
const goals = [
  ['nothing shed at 0.8x', (r) => r.near.status503 === 0],
  ['goodput at 3x >= 90 % of capacity', (r) => r.over.goodput >= 0.9 * r.capacity],
  ['2xx p99 at 3x <= 3x the unloaded p99', (r) => r.over.latency2xx.p99 <= 3 * r.unloaded.latency2xx.p99],
  ['503 p99 at 3x < 50 ms', (r) => !(r.over.latency503.p99 >= 50)],
  ['no timeout at 0.8x or 3x', (r) => r.over.timeouts === 0 && r.near.timeouts === 0],
]
const met = goals.map(() => 0)

console.log(`${runs} runs of: closed-loop capacity (shedding off), then 0.8x and 3x of it for ${duration} s each (shedding on)`)
for (let i = 1; i <= runs; i++) {
  let server = await start('off')
  let capacity
  try {
    await closedLoop({ url, connections: 16, duration, headers })
    capacity = Math.round((await closedLoop({ url, connections: 16, duration, headers })).rps)
  } finally { await server.stop() }
  server = await start('on')
  try {
    await openLoop({ url, rate: Math.round(capacity * warmupLevel), duration: 10, headers })
    await sleep(afterWarmup)
    const unloaded = await openLoop({ url, rate: Math.max(1, Math.round(capacity * unloadedLevel)), duration, headers })
    const near = await openLoop({ url, rate: Math.round(capacity * 0.8), duration, headers })
    await sleep(betweenLevels)
    const over = await openLoop({ url, rate: Math.round(capacity * 3), duration, headers })
    console.log(`run ${i}: capacity ${capacity} req/s | 0.8x: ${near.status503} of ${near.sent} shed, 2xx p99 ${ms(near.latency2xx.p99)} ms` +
      ` | 3x: goodput ${Math.round(over.goodput)}/s (${Math.round((100 * over.goodput) / capacity)} %), 2xx p99 ${ms(over.latency2xx.p99)} ms` +
      ` (unloaded ${ms(unloaded.latency2xx.p99)}), 503 p99 ${ms(over.latency503.p99)} ms, timeouts ${over.timeouts}`)
    goals.forEach(([, check], g) => { if (check({ capacity, unloaded, near, over })) met[g]++ })
  } finally { await server.stop() }
}
for (let g = 0; g < goals.length; g++) console.log(`${goals[g][0]}: met in ${met[g]} of ${runs} runs`)
