// Shared store get/set speed for 1 KB, 16 KB and 256 KB values, on 1, 2 and 4 threads,
// against the same work on a per-thread Map that copies values the same way (what a
// thread-local cache costs, without sharing anything).
// Usage (hold the bench lock): flock /tmp/spindle-bench.lock node bench/cache/store.mjs [ms-per-case=1500]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { createSharedStore, openSharedStore } from '@spindle/cache'

const KEYS = 64

function run ({ buffer, kind, op, size, ms }) {
  const value = Buffer.alloc(size, 7)
  let get, set
  if (kind === 'shared') {
    const store = openSharedStore(buffer)
    get = (k) => store.get(k).value
    set = (k) => store.set(k, value, { meta: { status: 200 } })
  } else {
    const map = new Map()
    get = (k) => Buffer.from(map.get(k).value)
    set = (k) => map.set(k, { value: Buffer.from(value), meta: JSON.parse(JSON.stringify({ status: 200 })) })
  }
  for (let i = 0; i < KEYS; i++) set(`/page/${i}`)
  let ops = 0
  const start = performance.now()
  const end = start + ms
  while (performance.now() < end) {
    for (let i = 0; i < 50; i++) {
      const key = `/page/${(ops + i) % KEYS}`
      if (op === 'get') get(key); else set(key)
    }
    ops += 50
  }
  return { ops, elapsed: performance.now() - start }
}

if (!isMainThread) {
  parentPort.postMessage(run(workerData))
} else {
  const ms = Number(process.argv[2] ?? 1500)
  const rows = []
  for (const size of [1024, 16 * 1024, 256 * 1024]) {
    for (const op of ['get', 'set']) {
      for (const threads of [1, 2, 4]) {
        const result = {}
        for (const kind of ['shared', 'map']) {
          const store = createSharedStore({ maxBytes: 64 * 1024 * 1024 })
          const workers = Array.from({ length: threads }, () => new Worker(new URL(import.meta.url), { workerData: { buffer: store.buffer, kind, op, size, ms } }))
          const outs = await Promise.all(workers.map((w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject) })))
          const ops = outs.reduce((n, o) => n + o.ops, 0)
          const seconds = Math.max(...outs.map((o) => o.elapsed)) / 1000
          result[kind] = { opsPerSec: ops / seconds, usPerOp: (seconds * 1e6 * threads) / ops, mbPerSec: (ops * size) / seconds / 1e6 }
        }
        rows.push({ size: `${size / 1024} KB`, op, threads, ...result })
        const r = result
        console.log(`${`${size / 1024} KB`.padStart(7)} ${op} x${threads}: shared ${Math.round(r.shared.opsPerSec).toLocaleString('en')} ops/s, ${r.shared.usPerOp.toFixed(2)} µs/op, ${Math.round(r.shared.mbPerSec).toLocaleString('en')} MB/s | per-thread Map ${Math.round(r.map.opsPerSec).toLocaleString('en')} ops/s | shared/Map ${(r.shared.opsPerSec / r.map.opsPerSec).toFixed(2)}`)
      }
    }
  }
}
