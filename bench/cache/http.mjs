// A cached page served by Spindle on 2 workers, against the same page rendered on every
// request and against a static Fastify reply of the same bytes; then how many renders
// each unique page costs when many requests for it arrive at once on both workers.
// Usage (hold the bench lock): flock /tmp/spindle-bench.lock node bench/cache/http.mjs [seconds=5] [connections=50]
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { request } from 'undici'
import { serve } from '@spindle/runtime'
import { cacheControlRoutes, createSharedStore } from '@spindle/cache'

const seconds = Number(process.argv[2] ?? 5)
const connections = Number(process.argv[3] ?? 50)
const app = fileURLToPath(new URL('./page-app.mjs', import.meta.url))

async function start (mode) {
  const store = createSharedStore({ maxBytes: 64 * 1024 * 1024 })
  const renders = new SharedArrayBuffer(4)
  const server = await serve({
    app, appOptions: { mode }, workers: 2, port: 0, host: '127.0.0.1', controlPort: false, handleSignals: false,
    shared: { spindleCache: store.buffer, renders }, controlRoutes: cacheControlRoutes(store),
  })
  return { server, store, renders: new Int32Array(renders) }
}

function load (url, duration) {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, pipelining: 1 }, (err, result) => err ? reject(err) : resolve(result))
  })
}

const results = {}
for (const mode of ['static', 'cached', 'uncached']) {
  const { server, renders } = await start(mode)
  try {
    const bytes = (await (await request(`${server.url}/page/1`)).body.arrayBuffer()).byteLength
    await load(`${server.url}/page/1`, 1)
    const r = await load(`${server.url}/page/1`, seconds)
    results[mode] = { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx, bytes, renders: Atomics.load(renders, 0) }
  } finally {
    await server.close()
  }
}
console.log(`one page (${results.static.bytes} bytes), 2 workers, ${connections} connections, ${seconds} s each, closed loop (autocannon)`)
for (const [mode, r] of Object.entries(results)) {
  console.log(`${mode.padEnd(9)} ${Math.round(r.rps).toLocaleString('en').padStart(8)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.errors}  renders ${r.renders}  vs static ${(r.rps / results.static.rps).toFixed(2)}x`)
}
console.log(`cached vs uncached: ${(results.cached.rps / results.uncached.rps).toFixed(1)}x`)

// Renders per unique page: every page requested by 8 clients at once, each on its own connection.
const { server, renders } = await start('cached')
try {
  const pages = 100
  const threadsSeen = new Set()
  for (let p = 0; p < pages; p++) {
    await Promise.all(Array.from({ length: 8 }, async () => {
      const res = await request(`${server.url}/page/u${p}`, { reset: true })
      await res.body.dump()
    }))
  }
  console.log(`renders per unique page (100 pages x 8 concurrent requests, 2 workers): ${(Atomics.load(renders, 0) / pages).toFixed(2)}`)
  void threadsSeen
} finally {
  await server.close()
}
