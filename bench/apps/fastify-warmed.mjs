// fastify-single.mjs after the runtime's nextTick warm-up (packages/runtime/src/tick-warmup.ts),
// as spindle start's workers and pool threads run it: run in a worker by fastify-in-worker.mjs
// with WARM_TICKS=1.
import { warmTickQueue } from '../../packages/runtime/dist/tick-warmup.js'

await warmTickQueue()
await import('./fastify-single.mjs')
