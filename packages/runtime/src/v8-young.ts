// The young-generation size V8 gives a worker thread started without resource limits. It
// depends on the machine (V8 sizes the heap from the memory it sees), so it is read once per
// process from a throwaway worker rather than assumed.
import { Worker } from 'node:worker_threads'

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
