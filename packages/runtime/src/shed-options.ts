// Options of the load-shedding plugin: checked once against their schema, defaults filled,
// copied and frozen, so the per-request path only compares numbers.
import { fail } from './option-checks.ts'
import { optionChecker } from '@spindle/options'
import { sheddingSchema } from './option-schema.ts'

export interface LoadSheddingOptions {
  /**
   * The latency budget, in ms: a render predicted to wait longer than this before it starts
   * (renders queued ahead x measured time between completions) is shed with reason
   * 'backlog'. Bursts that drain within it are queued, never shed. When the queue keeps
   * overflowing it, and the renders that arrived over the last maxBacklog ms need more than
   * 1.25 times that long, the worker is overloaded and holds its queue to overloadBacklog.
   * One render may always wait. Under serve(), while the process restarts a worker (and for
   * maxBacklog after), a burst may wait twice this (docs/overload.md#restarts). 0 disables
   * admission control. Default 1000: a page that starts within a second is served in time, and a
   * burst of a second's work is the most a rate-limited client sends at once.
   */
  maxBacklog?: number
  /**
   * The wait, in ms, an arriving render may be predicted to have while the worker is
   * overloaded (more work arrives than it can do); beyond it the render is shed with reason
   * 'overload', and the renders queued beyond it when the overload showed are shed too. One
   * render may always wait, so what is served is served soon.
   * While clients retry into the 503s (most arrivals are immediate retries: requests on a
   * connection within 100 ms of its 503) the bound is maxBacklog again: their number bounds
   * the work, and shedding them only buys more 503s.
   * 0 keeps maxBacklog throughout. Default 10 (0 when maxBacklog is 10 or less).
   */
  overloadBacklog?: number
  /** Shed renders while the mean event-loop delay of the last sample passes this, in ms. 0 disables. Default 0 (off). */
  maxEventLoopDelay?: number
  /** Shed renders while event-loop utilization over the last sample passes this (0..1). 0 disables. Default 0 (off). */
  maxEventLoopUtilization?: number
  /** Shed renders while the V8 heap in use passes this many bytes. 0 disables. Default 0 (off). */
  maxHeapUsedBytes?: number
  /** How often pressure is sampled, in ms. Default 250. */
  sampleInterval?: number
  /** Shed a render that waited this long in the worker before its handler, in ms. 0 disables. Default 2000. */
  maxQueueTime?: number
  /** Under `serve()`: shed renders while the worker's heap passes this fraction of its limit. 0 disables. Default 0.8. */
  maxHeapRatio?: number
  /** Under `serve()`: a worker that keeps shedding this long reports not ready, in ms. 0 disables. Default 5000. */
  unreadyAfter?: number
  /** Retry-After of a shed response, in seconds. Default 1. */
  retryAfter?: number
  /**
   * A client that asks again on the same connection right after a 503 (within
   * RETRY_WINDOW_MS, 100 ms: no person reloads that fast; retrying proxies and closed-loop
   * load generators do) gets its next 503 only after this many ms, so it cannot turn the
   * worker's spare time into thousands of 503s a second. 0 disables. Default 250.
   */
  retryHold?: number
  /** Paths starting with one of these are never shed (static files). */
  staticPrefixes?: readonly string[]
}

export interface ResolvedSheddingOptions {
  readonly maxBacklog: number
  readonly overloadBacklog: number
  readonly maxEventLoopDelay: number
  readonly maxEventLoopUtilization: number
  readonly maxHeapUsedBytes: number
  readonly sampleInterval: number
  readonly maxQueueTime: number
  readonly maxHeapRatio: number
  readonly unreadyAfter: number
  readonly retryAfter: number
  readonly retryHold: number
  readonly staticPrefixes: readonly string[]
}

export const DEFAULT_STATIC_PREFIXES: readonly string[] = Object.freeze([
  '/_next/static/', '/_next/image', '/assets/', '/static/', '/favicon.ico', '/robots.txt',
])

/**
 * How long an immediate retry waits for its 503, in ms: 100 connections that retry at once
 * then make at most 400 503s a second (about 0.01 of a core at 23 us each, bench/overload/shed-cost.mjs) instead of
 * thousands, while a client whose pooled connection is reused within RETRY_WINDOW_MS by
 * another user's request (a proxy whose pool hands out the socket freed last) waits at
 * most this much longer for a 503 it would get anyway.
 */
const DEFAULT_RETRY_HOLD = 250

/** The overload bound unless told otherwise: a render or two waiting, so served requests stay fast. */
const DEFAULT_OVERLOAD_BACKLOG = 10
/** The latency budget unless told otherwise (see maxBacklog). */
const DEFAULT_MAX_BACKLOG = 1000

const checkSheddingOptions = optionChecker(sheddingSchema, fail)

/**
 * Checks the options against the schema (option-schema.ts), fills defaults and returns a
 * frozen copy. Throws SPINDLE_RUNTIME_INVALID_OPTION naming the option; `prefix` is
 * 'shedding.' under serve(). `checked`: the shape was checked already (serve()'s own schema,
 * on the main thread), so a worker given these options never loads the checker.
 */
export function resolveSheddingOptions (input: LoadSheddingOptions | undefined, prefix = '', checked = false): ResolvedSheddingOptions {
  const opts = input ?? {}
  if (!checked) checkSheddingOptions(opts)
  const maxBacklog = opts.maxBacklog ?? DEFAULT_MAX_BACKLOG
  const overloadBacklog = opts.overloadBacklog ?? (maxBacklog > DEFAULT_OVERLOAD_BACKLOG ? DEFAULT_OVERLOAD_BACKLOG : 0)
  if (overloadBacklog > 0 && overloadBacklog >= maxBacklog) {
    fail(`${prefix}overloadBacklog (${overloadBacklog}) must be below maxBacklog (${maxBacklog}), or 0`)
  }
  return Object.freeze({
    maxBacklog,
    overloadBacklog,
    maxEventLoopDelay: opts.maxEventLoopDelay ?? 0,
    maxEventLoopUtilization: opts.maxEventLoopUtilization ?? 0,
    maxHeapUsedBytes: opts.maxHeapUsedBytes ?? 0,
    sampleInterval: opts.sampleInterval ?? 250,
    maxQueueTime: opts.maxQueueTime ?? 2000,
    maxHeapRatio: opts.maxHeapRatio ?? 0.8,
    unreadyAfter: opts.unreadyAfter ?? 5000,
    retryAfter: opts.retryAfter ?? 1,
    retryHold: opts.retryHold ?? DEFAULT_RETRY_HOLD,
    staticPrefixes: Object.freeze([...opts.staticPrefixes ?? DEFAULT_STATIC_PREFIXES]),
  })
}
