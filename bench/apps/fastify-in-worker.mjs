// fastify-single.mjs run inside one worker thread of an otherwise idle process: what a
// thread costs a Fastify app against the same app on a process's main thread, before any of
// Spindle's code. YOUNG_MB sets the worker's young generation (resourceLimits), as the
// runtime's `youngGenerationMb` does; WARM_TICKS=1 runs the runtime's nextTick warm-up first
// (fastify-warmed.mjs).
import { Worker } from 'node:worker_threads'

const young = process.env.YOUNG_MB ? { resourceLimits: { maxYoungGenerationSizeMb: Number(process.env.YOUNG_MB) } } : {}
const entry = process.env.WARM_TICKS ? './fastify-warmed.mjs' : './fastify-single.mjs'
const worker = new Worker(new URL(entry, import.meta.url), { argv: process.argv.slice(2), ...young })
worker.on('error', (err) => { console.error(err); process.exit(1) })
const stop = () => { worker.terminate().then(() => process.exit(0)) }
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
