// The fleet tier's cost at the store level, in one process against a real redis-server:
// a hit in shared memory through the fleet store against the shared-memory store alone
// (alternating rounds), and a miss served from Redis (entry written by another fleet
// member, read into this one's shared memory): median and p99.
// Usage (hold the bench lock): flock /work/wt/bench.lock node bench/fleet/store.mjs
import { randomUUID } from 'node:crypto'
import { createSharedStore, startFleet } from '@spindle/cache'
import { median, percentile } from '../lib/stats.mjs'
import { startRedis } from './redis.mjs'

const KEYS = 64
const SIZE = 20 * 1024
const ROUNDS = 6
const MS = 700
const MISSES = 2000

const quiet = { info () {}, warn () {} }
const redis = await startRedis()
try {
  const prefix = `bench-${randomUUID()}:`
  const fleet = await startFleet({ url: redis.url, prefix, memory: createSharedStore({ maxBytes: 64 * 1024 * 1024 }), logger: quiet })
  // A page-sized HTML value, compressible as HTML is.
  const value = Buffer.from('<div class="row"><span>item</span></div>'.repeat(Math.ceil(SIZE / 40)).slice(0, SIZE))
  for (let i = 0; i < KEYS; i++) {
    fleet.store.set(`/page/${i}`, value, { tags: ['t'], meta: { status: 200 } })
  }
  const hitRate = (get) => {
    let ops = 0
    const start = performance.now()
    while (performance.now() - start < MS) {
      for (let i = 0; i < 50; i++) if (!get(`/page/${(ops + i) % KEYS}`)) throw new Error('expected a hit')
      ops += 50
    }
    return (performance.now() - start) * 1000 / ops
  }
  const memoryUs = []
  const fleetUs = []
  for (let r = 0; r < ROUNDS; r++) {
    // The same shared memory read directly (memory-only) and through the fleet store.
    memoryUs.push(hitRate((k) => fleet.store.memory.get(k)))
    fleetUs.push(hitRate((k) => fleet.store.get(k)))
  }
  const m = median(memoryUs)
  const f = median(fleetUs)
  console.log(`hit in shared memory (${SIZE / 1024} KB): memory-only ${m.toFixed(2)} µs/get, fleet tier on ${f.toFixed(2)} µs/get, ratio ${(f / m).toFixed(3)} (median of ${ROUNDS} alternating rounds of ${MS} ms)`)

  // Misses served from Redis: b writes, a (its shared memory empty of these keys) reads.
  const writer = await startFleet({ url: redis.url, prefix, memory: createSharedStore({ maxBytes: 256 * 1024 * 1024 }), logger: quiet })
  for (let i = 0; i < MISSES; i++) writer.store.set(`/miss/${i}`, value, { tags: [`p${i}`], meta: { status: 200 } })
  const filled = performance.now()
  while (writer.agent.counters.saves < MISSES) await new Promise((resolve) => setTimeout(resolve, 20))
  console.log(`${MISSES} entries written to Redis in ${Math.round(performance.now() - filled)} ms (one process)`)
  const ms = []
  for (let i = 0; i < MISSES; i++) {
    const start = performance.now()
    const entry = await fleet.store.get(`/miss/${i}`)
    ms.push(performance.now() - start)
    if (!entry) throw new Error(`/miss/${i} was not served from Redis`)
  }
  ms.sort((x, y) => x - y)
  console.log(`miss served from Redis (${SIZE / 1024} KB, gzipped in Redis): median ${percentile(ms, 50).toFixed(3)} ms, p99 ${percentile(ms, 99).toFixed(3)} ms, max ${ms.at(-1).toFixed(3)} ms over ${MISSES} keys`)
  await writer.close()
  await fleet.close()
} finally {
  await redis.stop()
}
