// The render-pool options both framework adapters take (`threads`, `threadConcurrency`,
// `maxBacklog`, `hangTimeout`): their schema, their defaults, and the pool size
// `spindle start --mode pool` hands a worker.
import type { OptionSchema } from '@spindle/options'

/** JSON schema properties of the pool options, for an adapter's own option schema. */
export const poolOptionProperties: Readonly<Record<string, OptionSchema>> = {
  threads: { type: 'integer', minimum: 0, expected: 'an integer from 0' },
  threadConcurrency: { type: 'integer', minimum: 1, expected: 'an integer from 1' },
  maxBacklog: { type: 'integer', minimum: 1, expected: 'an integer from 1 (ms)' },
  hangTimeout: { type: 'integer', minimum: 0, expected: 'an integer from 0 (ms; 0 = never)' },
}

/** Renders one pool thread runs at once; ms a request may wait for a slot; ms a thread's event loop may go without turning. */
export const POOL_DEFAULTS = Object.freeze({ threadConcurrency: 4, maxBacklog: 1000, hangTimeout: 10_000 })

/** The pool size `spindle start --mode pool` gives its one worker (SPINDLE_POOL_THREADS), else 0. */
export function poolThreadsFromEnv (): number {
  const n = Number(process.env.SPINDLE_POOL_THREADS)
  return Number.isInteger(n) && n > 0 ? n : 0
}
