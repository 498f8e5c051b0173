// The onset of an overload: how soon the workers see a step to 3x and what the requests
// sent before then get. Two servers of the Next.js example (2 workers): one with shedding
// off, whose closed-loop capacity is read before each step, and one with shedding on,
// which takes open-loop load at 3x that capacity from idle for --duration s.
//   node bench/overload/onset.mjs [--runs 4] [--duration 5]
// Per run: goodput (share of the capacity read before it), 2xx and 503 p99, and when the
// first 503s were answered (ms from the start of the load: the first worker to see the step
// answers the renders queued until then at once); the 503s that took 80 ms or more, by
// when they were sent, and when they were answered.
import { setTimeout as sleep } from 'node:timers/promises'
import { benchArgs, wholeArg } from '../lib/args.mjs'
import { openLoop } from '../lib/open-loop.mjs'
import { url, urlAt, headers, closedLoopCapacity, startSpindle, port, warmUp } from './sequence.mjs'

const { values } = benchArgs({ options: { runs: { type: 'string', default: '4' }, duration: { type: 'string', default: '5' } } })
const runs = wholeArg(values, 'runs', 1)
const duration = wholeArg(values, 'duration', 1)
const offUrl = urlAt(port + 1)
const ms = (x) => (Number.isFinite(x) ? Math.round(x) : '-')

const off = await startSpindle({ p: port + 1, shedding: 'off' })
try {
  const on = await startSpindle({ shedding: 'on' })
  try {
    const first = await closedLoopCapacity(duration, duration, offUrl)
    await warmUp(first)
    for (let run = 1; run <= runs; run++) {
      const capacity = await closedLoopCapacity(0, duration, offUrl)
      const sent = []
      const over = await openLoop({ url, rate: Math.round(capacity * 3), duration, headers, record: (r) => sent.push(r) })
      const shed = sent.filter((r) => r.status === 503)
      const answeredAt = shed.map((r) => r.at + r.ms).sort((a, b) => a - b)
      const slow = shed.filter((r) => r.ms >= 80)
      const slowSentBy250 = {}
      for (const r of slow) { const bin = Math.floor(r.at / 250) * 250; slowSentBy250[bin] = (slowSentBy250[bin] ?? 0) + 1 }
      console.log(`run ${run}: capacity ${capacity} req/s | 3x: goodput ${Math.round(over.goodput)}/s (${Math.round((100 * over.goodput) / capacity)} %), ` +
        `2xx p99 ${ms(over.latency2xx.p99)} ms, 503 p99 ${ms(over.latency503.p99)} ms, 503s ${shed.length}, timeouts ${over.timeouts}, generator loop delay p99 ${ms(over.generatorLagP99)} ms | ` +
        `first 503 answered at ${ms(answeredAt[0])} ms; ${slow.length} 503s took 80 ms or more (sent in 250 ms bins: ${JSON.stringify(slowSentBy250)}; ` +
        `answered ${ms(Math.min(...slow.map((r) => r.at + r.ms)))}–${ms(Math.max(...slow.map((r) => r.at + r.ms)))} ms)`)
      await sleep(3000)
    }
  } finally { await on.stop() }
} finally { await off.stop() }
