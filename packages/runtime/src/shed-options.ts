// Options of the load-shedding plugin: checked once, defaults filled, copied and frozen, so
// the per-request path only compares numbers.
import { fail, show } from './option-checks.ts'

export interface LoadSheddingOptions {
  /**
   * Shed a render when the renders already admitted in this worker would keep it waiting
   * longer than this, in ms of event-loop time (renders in flight x measured loop time per
   * render); one render may always wait. A worker whose arrivals ask for at most 1.2 times
   * its loop time is catching up, not overloaded, and queues up to twice this; one whose
   * arrivals of the last 2 s asked for no more than its loop, up to three times. Lower keeps
   * served requests faster and sheds more of the bursts near capacity. 0 disables. Default 100.
   */
  maxBacklog?: number
  /**
   * In ms of event-loop time: the bound that replaces maxBacklog while the worker is past its
   * capacity (it shed for backlog within the last 500 ms, and the renders arriving ask for
   * more than 1.4 times the loop time there is). Renders queued beyond it in the last 20 ms
   * are then shed with reason 'overload'; a render that arrives at the full queue takes the
   * place of the oldest one waiting if that one waited at most 20 ms (shed with 'overload'),
   * so the queue holds the latest arrivals; and once they ask for twice the loop time, one
   * render runs at a time (a second only while the loop idles, or while the running one needs
   * under 5 ms of it). Below maxBacklog: served requests wait less under sustained overload,
   * bursts near capacity still get maxBacklog and two renders at a time. One render may
   * always wait. 0 keeps maxBacklog and two renders throughout. Default 30 (0 when maxBacklog
   * is 30 or less).
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
 * then make at most 400 503s a second (about 0.05 of a core at 0.13 ms each) instead of
 * thousands, while a client whose pooled connection is reused within RETRY_WINDOW_MS by
 * another user's request (a proxy whose pool hands out the socket freed last) waits at
 * most this much longer for a 503 it would get anyway.
 */
const DEFAULT_RETRY_HOLD = 250

/** The overload bound unless told otherwise: about one render queued behind two running. */
const DEFAULT_OVERLOAD_BACKLOG = 30

const KNOWN = new Set([
  'maxBacklog', 'overloadBacklog', 'maxEventLoopDelay', 'maxEventLoopUtilization', 'maxHeapUsedBytes', 'sampleInterval', 'maxQueueTime',
  'maxHeapRatio', 'unreadyAfter', 'retryAfter', 'retryHold', 'staticPrefixes',
])

function atLeastZero (prefix: string, name: string, value: unknown, fallback: number, max = Infinity): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > max) {
    fail(`${prefix}${name} must be a number from 0 to ${max}, got ${show(value)}`)
  }
  return value
}

/** Throws SPINDLE_RUNTIME_INVALID_OPTION naming the option; `prefix` is 'shedding.' under serve(). */
export function resolveSheddingOptions (input: LoadSheddingOptions | undefined, prefix = ''): ResolvedSheddingOptions {
  const opts = input ?? {}
  if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) {
    fail(`${prefix ? prefix.slice(0, -1) : 'options'} must be an object or false, got ${show(opts)}`)
  }
  for (const key of Object.keys(opts)) {
    if (!KNOWN.has(key)) fail(`unknown option ${JSON.stringify(prefix + key)}`)
  }
  const sampleInterval = atLeastZero(prefix, 'sampleInterval', opts.sampleInterval, 250)
  if (sampleInterval < 10) fail(`${prefix}sampleInterval must be at least 10 ms, got ${sampleInterval}`)
  const retryAfter = atLeastZero(prefix, 'retryAfter', opts.retryAfter, 1)
  if (!Number.isInteger(retryAfter)) fail(`${prefix}retryAfter must be a whole number of seconds, got ${retryAfter}`)
  const prefixes = opts.staticPrefixes ?? DEFAULT_STATIC_PREFIXES
  if (!Array.isArray(prefixes) || !prefixes.every((p) => typeof p === 'string' && p.startsWith('/'))) {
    fail(`${prefix}staticPrefixes must be an array of paths starting with '/'`)
  }
  const maxBacklog = atLeastZero(prefix, 'maxBacklog', opts.maxBacklog, 100)
  const overloadBacklog = atLeastZero(prefix, 'overloadBacklog', opts.overloadBacklog, maxBacklog > DEFAULT_OVERLOAD_BACKLOG ? DEFAULT_OVERLOAD_BACKLOG : 0)
  if (overloadBacklog > 0 && overloadBacklog >= maxBacklog) {
    fail(`${prefix}overloadBacklog (${overloadBacklog}) must be below maxBacklog (${maxBacklog}), or 0`)
  }
  return Object.freeze({
    maxBacklog,
    overloadBacklog,
    maxEventLoopDelay: atLeastZero(prefix, 'maxEventLoopDelay', opts.maxEventLoopDelay, 0),
    maxEventLoopUtilization: atLeastZero(prefix, 'maxEventLoopUtilization', opts.maxEventLoopUtilization, 0, 1),
    maxHeapUsedBytes: atLeastZero(prefix, 'maxHeapUsedBytes', opts.maxHeapUsedBytes, 0),
    sampleInterval,
    maxQueueTime: atLeastZero(prefix, 'maxQueueTime', opts.maxQueueTime, 2000),
    maxHeapRatio: atLeastZero(prefix, 'maxHeapRatio', opts.maxHeapRatio, 0.8, 1),
    unreadyAfter: atLeastZero(prefix, 'unreadyAfter', opts.unreadyAfter, 5000),
    retryAfter,
    retryHold: atLeastZero(prefix, 'retryHold', opts.retryHold, DEFAULT_RETRY_HOLD),
    staticPrefixes: Object.freeze([...prefixes]),
  })
}
