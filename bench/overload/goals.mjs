// The overload goals checked against the capacity of the moment rather than one measured at
// the start of a long run: the machine's speed drifts by tens of percent within minutes, so
// "0.8x" of an old measure can be full load now.
//   node bench/overload/goals.mjs [--runs 4] [--duration 5] [--max-drift 10]
// Each run starts two servers of the Next.js example on Spindle with 2 workers: one with
// shedding off, whose closed-loop capacity is read, and one with shedding on, which takes the
// open-loop load. One server idles while the other is loaded. After the warm-ups and the
// unloaded measure, the capacity is read right before 0.8x, between 0.8x and 3x and right
// after 3x, so each level lies between two readings a few seconds apart, and its rate is set
// from the reading just before it. A level whose two readings differ by more than --max-drift
// percent (the machine's speed changed under it, so "0.8x" or "3x" was not what it claims) is
// printed but not judged. Each run prints one line: what was shed at 0.8x, and goodput (as a
// share of the mean of the readings around 3x), 2xx and 503 p99 and timeouts at 3x, then the
// p99s of what 3x sent after its first second (ONSET_MS), printed and not judged. At the
// end: in how many judged levels each goal of docs/overload.md was met, and in how many runs
// with both levels judged all of them were. A level starts SETTLE_MS after the reading before
// it: without the pause the other server went on working into the level (the renders the
// closed loop's end cut off, the garbage they left) and took 0.07 of a core over a 5 s
// level at 3x; 0.04 with it, and an idle server 0.02.
// The cores the server and the generator used at 3x
// and in the readings around it are printed too: on a small machine the generator's share
// grows with the rate it sends.
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { wholeArg } from '../lib/args.mjs'
import { openLoop } from '../lib/open-loop.mjs'
import { percentile } from '../lib/stats.mjs'
import { port, url, urlAt, headers, warmUp, unloadedLevel, closedLoopCapacity, startSpindle, withCores } from './sequence.mjs'

const { values } = parseArgs({ options: { runs: { type: 'string', default: '4' }, duration: { type: 'string', default: '5' }, 'max-drift': { type: 'string', default: '10' } } })
const runs = wholeArg(values, 'runs', 1)
const duration = wholeArg(values, 'duration', 2)
const maxDrift = wholeArg(values, 'max-drift', 0)
/** The server without shedding listens next to the one under load. */
const offPort = port + 1
const offUrl = urlAt(offPort)
/** ms between a capacity reading and the level after it (see the head). */
const SETTLE_MS = 1000
const ms = (x) => (Number.isFinite(x) ? Math.round(x) : '-')
/**
 * The onset of 3x: a worker cannot tell a step from a clump of new connections for its first
 * 150-300 ms (docs/overload.md#when-a-step-is-seen-late), and in a 5 s level the renders
 * queued until then are more than 1 % of the 503s. The p99s of what was sent after it are
 * printed beside the level's, so a reader sees whether the onset or the steady state missed.
 */
const ONSET_MS = 1000
/** 2xx and 503 p99 of the requests sent ONSET_MS or more into the level. */
function afterOnset (sent) {
  const late = sent.filter((r) => r.at >= ONSET_MS)
  const p99 = (match) => { const xs = late.filter((r) => match(r.status)).map((r) => r.ms).sort((a, b) => a - b); return xs.length ? percentile(xs, 99) : NaN }
  return { p99of2xx: p99((s) => s >= 200 && s < 300), p99of503: p99((s) => s === 503) }
}
const drift = (a, b) => Math.round((100 * Math.abs(b - a)) / a)
// Each goal, the levels it needs judged, and in how many runs it was met.
const goals = [
  ['nothing shed at 0.8x', ['near'], (r) => r.near.status503 === 0],
  ['goodput at 3x >= 90 % of capacity', ['over'], (r) => r.over.goodput >= 0.9 * r.overCapacity],
  ['2xx p99 at 3x <= 3x the unloaded p99', ['over'], (r) => r.over.latency2xx.p99 <= 3 * r.unloaded.latency2xx.p99],
  ['503 p99 at 3x < 100 ms', ['over'], (r) => !(r.over.latency503.p99 >= 100)],
  ['no timeout at 0.8x or 3x', ['near', 'over'], (r) => r.over.timeouts === 0 && r.near.timeouts === 0],
].map(([name, needs, check]) => ({ name, needs, check, met: 0, judged: 0 }))
let bothJudged = 0
let allMet = 0

console.log(`${runs} runs of: 0.8x and 3x for ${duration} s each (shedding on), each level between two readings of the closed-loop capacity (shedding off)`)
for (let i = 1; i <= runs; i++) {
  const off = await startSpindle({ p: offPort, shedding: 'off' })
  let result
  try {
    const on = await startSpindle({ shedding: 'on' })
    try {
      const first = await closedLoopCapacity(duration, duration, offUrl)
      await warmUp(first)
      const unloaded = await openLoop({ url, rate: Math.max(1, Math.round(first * unloadedLevel)), duration, headers })
      const before = await closedLoopCapacity(0, duration, offUrl)
      await sleep(SETTLE_MS)
      // Why 0.8x shed what it shed (X-Spindle-Shed): a queue past the budget, or an overload seen.
      const nearReasons = {}
      const near = await openLoop({ url, rate: Math.round(before * 0.8), duration, headers, record: (r) => { if (r.status === 503) nearReasons[r.shed] = (nearReasons[r.shed] ?? 0) + 1 } })
      const betweenUse = await withCores(off, () => closedLoopCapacity(0, duration, offUrl))
      const between = betweenUse.value
      await sleep(SETTLE_MS)
      // Each request of 3x with its send time, so the onset can be told from what follows it.
      const overSent = []
      const overUse = await withCores(on, () => openLoop({ url, rate: Math.round(between * 3), duration, headers, record: (r) => overSent.push(r) }))
      const over = overUse.value
      const afterUse = await withCores(off, () => closedLoopCapacity(0, duration, offUrl))
      const after = afterUse.value
      const cores = (use) => `${use.server.toFixed(2)} / ${use.generator.toFixed(2)}`
      result = {
        before, between, after, unloaded, near, nearReasons, over, overCapacity: (between + after) / 2, afterOnset: afterOnset(overSent),
        cores: `cores used by server / generator: 3x ${cores(overUse)}, capacity readings ${cores(betweenUse)} and ${cores(afterUse)}`,
      }
    } finally { await on.stop() }
  } finally { await off.stop() }
  const { before, between, after, unloaded, near, nearReasons, over, overCapacity, afterOnset: late, cores } = result
  const reasons = Object.entries(nearReasons).map(([why, n]) => `${why || '?'} ${n}`).join(', ')
  const fair = { near: drift(before, between) <= maxDrift, over: drift(between, after) <= maxDrift }
  const judgedNote = (level, a, b) => `${fair[level] ? '' : 'not judged, '}drift ${drift(a, b)} %`
  console.log(`run ${i}: capacity ${before} / ${between} / ${after} req/s` +
    ` | 0.8x (${judgedNote('near', before, between)}): ${near.status503} of ${near.sent} shed${reasons ? ` (${reasons})` : ''}, 2xx p99 ${ms(near.latency2xx.p99)} ms, timeouts ${near.timeouts}` +
    ` | 3x (${judgedNote('over', between, after)}): goodput ${Math.round(over.goodput)}/s (${Math.round((100 * over.goodput) / overCapacity)} %), 2xx p99 ${ms(over.latency2xx.p99)} ms` +
    ` (unloaded ${ms(unloaded.latency2xx.p99)}), 503 p99 ${ms(over.latency503.p99)} ms, timeouts ${over.timeouts}, connections ${over.connections}` +
    `\n  3x sent after its first ${ONSET_MS} ms (not judged): 2xx p99 ${ms(late.p99of2xx)} ms, 503 p99 ${ms(late.p99of503)} ms\n  ${cores}`)
  let all = true
  for (const goal of goals) {
    if (!goal.needs.every((level) => fair[level])) continue
    goal.judged++
    if (goal.check(result)) goal.met++
    else all = false
  }
  if (fair.near && fair.over) { bothJudged++; if (all) allMet++ }
}
console.log(`levels judged where the capacity moved by at most ${maxDrift} % between the readings around them`)
for (const goal of goals) console.log(`${goal.name}: met in ${goal.met} of ${goal.judged} judged runs`)
console.log(`every goal: met in ${allMet} of ${bothJudged} runs with both levels judged`)
