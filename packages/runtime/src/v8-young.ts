// The young generation of rendering threads: Spindle's default size, and the size V8 gives a
// worker thread started without resource limits, which caps it. V8's depends on the machine
// (it sizes the heap from the memory it sees), so it is read once per process from a
// throwaway worker rather than assumed.
import { Worker } from 'node:worker_threads'

/**
 * The young-generation size Spindle gives a rendering thread (a runtime worker, a pool
 * thread), in MB, where V8's own is larger. Minor GCs of V8's own young generation (192 MB)
 * stopped a rendering worker for 45-60 ms; at 48 MB they take 10-25 ms and, run more often,
 * cost the same total time. 96 MB (32 MB semi-spaces) gave 2 workers 3-9 % more throughput
 * than 48 on the Next.js and React Router examples at 0.75x node:cluster's memory
 * (docs/overload.md#garbage-collection-pauses).
 */
export const DEFAULT_YOUNG_GENERATION_MB = 96

/** DEFAULT_YOUNG_GENERATION_MB, or V8's own size `v8Mb` where that is smaller. */
export function defaultYoungGenerationMb (v8Mb: number | undefined): number {
  return Math.min(DEFAULT_YOUNG_GENERATION_MB, v8Mb ?? DEFAULT_YOUNG_GENERATION_MB)
}

const PROBE = "const t = require('node:worker_threads'); t.parentPort.postMessage(t.resourceLimits.maxYoungGenerationSizeMb)"

let probe: Promise<number | undefined> | undefined

/** V8's own young-generation size of a worker, in MB; undefined if it could not be read. */
export function workerYoungGenerationMb (): Promise<number | undefined> {
  probe ??= new Promise((resolve) => {
    const w = new Worker(PROBE, { eval: true, stdout: true, stderr: true })
    w.once('message', (mb: unknown) => {
      resolve(typeof mb === 'number' && mb > 0 ? mb : undefined)
      void w.terminate()
    })
    w.once('error', () => resolve(undefined))
    w.once('exit', () => resolve(undefined))
  })
  return probe
}
