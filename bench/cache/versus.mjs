// @spindle/cache against another build of itself (e.g. the previous commit's), in one run:
// shared store get latency (1 thread, 1 KB and 16 KB values) and cache-hit throughput of
// httpCache (one page, 2 workers, autocannon), rounds alternating between the two builds.
// Usage (hold the bench lock):
//   flock /work/wt/bench.lock node bench/cache/versus.mjs <other-dist-dir> [rounds=3] [seconds=4]
// where <other-dist-dir> holds that build's dist (its index.js).
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { join, resolve } from 'node:path'
import autocannon from 'autocannon'
import { serve } from '@spindle/runtime'

const here = fileURLToPath(new URL('.', import.meta.url))

async function storeGets ({ dist, size, ms }) {
  const { createSharedStore } = await import(dist)
  const store = createSharedStore({ maxBytes: 64 * 1024 * 1024 })
  const value = Buffer.alloc(size, 7)
  for (let i = 0; i < 64; i++) store.set(`/page/${i}`, value, { meta: { status: 200 } })
  let ops = 0
  const start = performance.now()
  while (performance.now() < start + ms) {
    for (let i = 0; i < 50; i++) store.get(`/page/${(ops + i) % 64}`)
    ops += 50
  }
  return ((performance.now() - start) * 1000) / ops
}

if (!isMainThread) {
  parentPort.postMessage(await storeGets(workerData))
} else {
  const other = pathToFileURL(join(resolve(process.argv[2]), 'index.js')).href
  const current = pathToFileURL(join(here, '../../packages/cache/dist/index.js')).href
  const rounds = Number(process.argv[3] ?? 3)
  const seconds = Number(process.argv[4] ?? 4)
  const builds = { other, current }
  const out = { other: { get1: [], get16: [], rps: [] }, current: { get1: [], get16: [], rps: [] } }
  const inWorker = (data) => new Promise((res, rej) => { const w = new Worker(new URL(import.meta.url), { workerData: data }); w.once('message', res); w.once('error', rej) })
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['other', 'current'] : ['current', 'other']
    for (const name of order) {
      const dist = builds[name]
      out[name].get1.push(await inWorker({ dist, size: 1024, ms: 1500 }))
      out[name].get16.push(await inWorker({ dist, size: 16 * 1024, ms: 1500 }))
      const { createSharedStore } = await import(dist)
      const store = createSharedStore({ maxBytes: 64 * 1024 * 1024 })
      const server = await serve({
        app: join(here, 'versus-app.mjs'), appOptions: { dist }, workers: 2, port: 0, host: '127.0.0.1', controlPort: false, handleSignals: false,
        shared: { spindleCache: store.buffer },
      })
      try {
        const url = `${server.url}/page/1`
        await new Promise((res, rej) => autocannon({ url, connections: 50, duration: 1 }, (e, r) => e ? rej(e) : res(r)))
        const r = await new Promise((res, rej) => autocannon({ url, connections: 50, duration: seconds }, (e, r) => e ? rej(e) : res(r)))
        if (r.non2xx + r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`)
        out[name].rps.push(r.requests.average)
      } finally {
        await server.close()
      }
    }
  }
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
  for (const [label, key, unit, digits] of [['store get 1 KB', 'get1', 'µs', 3], ['store get 16 KB', 'get16', 'µs', 3], ['cache hits, 2 workers', 'rps', 'req/s', 0]]) {
    const o = median(out.other[key])
    const c = median(out.current[key])
    console.log(`${label.padEnd(22)} other ${o.toFixed(digits)} ${unit}  current ${c.toFixed(digits)} ${unit}  current/other ${(c / o).toFixed(3)}  (rounds: other ${out.other[key].map((v) => v.toFixed(digits)).join(' ')}; current ${out.current[key].map((v) => v.toFixed(digits)).join(' ')})`)
  }
}
