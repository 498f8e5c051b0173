import { describe, expect, it } from 'vitest'
import { Worker } from 'node:worker_threads'
import { once } from 'node:events'
import { createSharedStore } from '@spindle/cache'

interface Report { counts: Record<string, number>, errors: string[] }

describe('shared store under concurrency', () => {
  it('4 threads of random get/set/delete/invalidate/evict: no torn or wrong reads, budget kept', async () => {
    const maxBytes = 4 * 1024 * 1024
    // Small blocks and values up to 60 KB: long block chains, constant eviction.
    const store = createSharedStore({ maxBytes, blockSize: 512, maxEntryBytes: 128 * 1024, maxTags: 64 })
    const workers = Array.from({ length: 4 }, (_, i) => new Worker(new URL('./fixtures/stress-worker.mjs', import.meta.url), {
      workerData: { buffer: store.buffer, durationMs: 4000, keys: 300, maxValue: 60_000, seed: 7 + i, maxBytes },
    }))
    const reports = await Promise.all(workers.map(async (w) => {
      const ended = once(w, 'error').then(([err]) => { throw err })
      return (await Promise.race([once(w, 'message'), ended]))[0] as Report
    }))
    const total = (name: string): number => reports.reduce((n, r) => n + r.counts[name]!, 0)
    expect(reports.flatMap((r) => r.errors)).toEqual([])
    expect(total('errors')).toBe(0)
    expect(total('overruns')).toBe(0)
    // The run did real work: many hits were checked and many entries were evicted.
    expect(total('hits')).toBeGreaterThan(1000)
    const stats = store.stats()
    expect(stats.evictions).toBeGreaterThan(100)
    expect(stats.resets).toBe(0)
    expect(stats.byteLength).toBeLessThanOrEqual(maxBytes)
    expect(stats.bytesUsed).toBeLessThanOrEqual(stats.bytesAllocated)
    expect(stats.bytesAllocated).toBeLessThanOrEqual(stats.bytesCapacity)
    // The structures are still consistent: everything can be replaced and read back.
    store.clear()
    for (let i = 0; i < 50; i++) store.set(`k${i}`, Buffer.alloc(1000, i))
    for (let i = 0; i < 50; i++) expect(store.get(`k${i}`)?.value.equals(Buffer.alloc(1000, i))).toBe(true)
    expect(store.stats().bytesAllocated).toBe(50 * 2 * 512)
  })
})
