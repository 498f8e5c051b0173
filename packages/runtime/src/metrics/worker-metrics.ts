// Request metrics of one worker thread, counted in plain numbers on the request path. The
// supervisor asks for them over the worker's port (protocol.ts, MetricSnapshot) and adds up
// every worker's answer; nothing here runs unless metrics are on.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { MetricSnapshot } from '../protocol.ts'
import { BucketHistogram, type HistogramSeries } from './bucket-histogram.ts'
import { RoutePatterns } from './route-patterns.ts'
import { kArrivedAt, kCacheOutcome, kStartedAt, type Stamped } from '../admission/stamps.ts'

/** The route pattern a request was routed to (undefined: no route matched). */
const kRoute = Symbol('spindle.route')
type Stamps = Stamped & { [kRoute]?: string }

/**
 * Bucket bounds in seconds: from a cache hit (well under a millisecond) to a render that
 * misses a 5 s client timeout, dense between 5 ms and 1 s where pages are rendered.
 */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Queue delay sits below the latency budget (a few hundred ms) when admission works. */
export const QUEUE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
const CACHE_OUTCOMES = new Set(['HIT', 'MISS', 'STALE', 'REVALIDATED', 'BYPASS'])


export interface WorkerMetrics {
  /**
   * Records one response: call it once the raw response has closed (the runtime's worker
   * does, from the 'close' listener it keeps on every response anyway).
   */
  observe (res: ServerResponse): void
  /** Every metric with its figures so far, as plain data that crosses a thread boundary. */
  snapshot (): MetricSnapshot[]
}

/** Status classes by the status code's first digit; 0 and anything out of range: 'other'. */
const STATUS_CLASSES = ['other', '1xx', '2xx', '3xx', '4xx', '5xx'] as const

function statusClassIndex (code: number): number {
  return code >= 100 && code < 600 ? Math.floor(code / 100) : 0
}

/**
 * Wraps every route handler to stamp each request with its route pattern and, when the
 * load-shedding plugin is not there to stamp when each handler starts, with that time. The
 * observation itself is made by observe(), from the raw response's 'close' listener the
 * worker keeps for its in-flight count: an onResponse hook would make Fastify put two more
 * listeners on every response, which cost 7 % of a hello-world route's throughput
 * (docs/runtime.md#metrics). Call it after the load-shedding plugin and before the app.
 */
export function registerWorkerMetrics (app: FastifyInstance, stampedByShedding = false): WorkerMetrics {
  const duration = new BucketHistogram(
    'spindle_http_request_duration_seconds',
    'Time from the request\'s arrival to its response, by route pattern and status class',
    DURATION_BUCKETS,
  )
  const queueDelay = new BucketHistogram(
    'spindle_http_queue_delay_seconds',
    'Time from the request\'s arrival to the start of its route handler (admission queue included)',
    QUEUE_BUCKETS,
  )
  const queueSeries = queueDelay.series()
  let rendered = 0
  const outcomes = new Map<string, number>()
  const snapshot = (): MetricSnapshot[] => [
    duration.snapshot(),
    queueDelay.snapshot(),
    { type: 'counter', name: 'spindle_http_renders_total', help: 'Requests that reached a route handler (cache hits and shed requests do not)', values: [{ value: rendered, labels: {} }] },
    {
      type: 'counter',
      name: 'spindle_cache_responses_total',
      help: 'Responses labelled by the HTTP cache, by outcome (hit, miss, stale, revalidated, bypass)',
      values: [...outcomes].map(([outcome, value]) => ({ value, labels: { outcome } })),
    },
  ]

  // Each route's handler is wrapped to stamp its pattern, a constant of the route there: an
  // app-wide onRequest hook would read it from request.routeOptions, which Fastify builds
  // anew on every read (about 0.4 µs of a hello-world request's 9.4 µs of user CPU time,
  // bench/README.md). Requests answered before their handler ran are looked up in
  // `patterns` when they end. Without the load-shedding plugin, which stamps when a handler
  // is let run, the wrapper stamps that too.
  const patterns = new RoutePatterns(app)
  app.addHook('onRoute', (route) => {
    const url = route.url
    patterns.add(route.method, url)
    const handler = route.handler
    route.handler = function stampRoute (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const raw = request.raw as Stamps
      raw[kRoute] = url
      if (!stampedByShedding) raw[kStartedAt] = performance.now()
      return handler.call(this, request, reply)
    }
  })

  // Each route pattern's series by status class: the pattern is the same string on every
  // request of a route, so the lookup builds and hashes no new string.
  const series = new Map<string, Array<HistogramSeries | undefined>>()
  function observe (res: ServerResponse): void {
    // A client that left before the response ended: no response to count.
    if (!res.writableEnded) return
    const raw = res.req as (IncomingMessage & Stamps) | undefined
    if (!raw) return
    const arrived = raw[kArrivedAt]
    if (arrived === undefined) return
    const ms = performance.now() - arrived
    // Stamped only by a route handler that ran (a 404 renders nothing; a cache hit or a shed request never starts).
    const url = raw[kRoute]
    // A request no route matches has no pattern: its raw URL would give every probe a series.
    const route = url ?? patterns.find(raw.method, raw.url) ?? 'unmatched'
    const startedAt = raw[kStartedAt]
    if (url !== undefined && startedAt !== undefined) {
      rendered++
      queueSeries.observe((startedAt - arrived) / 1000)
    }
    const status = statusClassIndex(res.statusCode)
    let byStatus = series.get(route)
    if (!byStatus) {
      byStatus = []
      series.set(route, byStatus)
    }
    let child = byStatus[status]
    if (!child) {
      child = duration.series({ route, status_class: STATUS_CLASSES[status]! })
      byStatus[status] = child
    }
    child.observe(ms / 1000)
    const outcome = raw[kCacheOutcome]
    if (outcome !== undefined && CACHE_OUTCOMES.has(outcome)) {
      const label = outcome.toLowerCase()
      outcomes.set(label, (outcomes.get(label) ?? 0) + 1)
    }
  }

  return { observe, snapshot }
}
