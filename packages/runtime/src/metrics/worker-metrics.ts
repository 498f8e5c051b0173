// Request metrics of one worker thread, kept in a prom-client registry of its own. The
// supervisor asks for them over the worker's port (protocol.ts) and merges every worker's
// answer; nothing here runs unless metrics are on.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Histogram, type MetricObjectWithValues, type MetricValue, Registry } from 'prom-client'
import { kArrivedAt } from '../load-shedding.ts'

/**
 * Bucket bounds in seconds: from a cache hit (well under a millisecond) to a render that
 * misses a 5 s client timeout, dense between 5 ms and 1 s where pages are rendered.
 */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Queue delay sits below the latency budget (a few hundred ms) when admission works. */
export const QUEUE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
/** The response header `httpCache` labels its answers with (its `statusHeader` default). */
export const CACHE_HEADER = 'x-cache'
const CACHE_OUTCOMES = new Set(['HIT', 'MISS', 'STALE', 'REVALIDATED', 'BYPASS'])


export interface WorkerMetrics {
  readonly registry: Registry
  /** Every metric with its values, as plain data that crosses a thread boundary. */
  snapshot (): Promise<MetricObjectWithValues<MetricValue<string>>[]>
}

function statusClass (code: number): string {
  return code >= 100 && code < 600 ? `${Math.floor(code / 100)}xx` : 'other'
}

/**
 * Registers the hooks that feed the registry. Call it after the load-shedding plugin and
 * before the app, so the preHandler here runs once admission has let the request through.
 */
export function registerWorkerMetrics (app: FastifyInstance): WorkerMetrics {
  const registry = new Registry()
  const duration = new Histogram({
    name: 'spindle_http_request_duration_seconds',
    help: 'Time from the request\'s arrival to its response, by route pattern and status class',
    labelNames: ['route', 'status_class'],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  })
  const queueDelay = new Histogram({
    name: 'spindle_http_queue_delay_seconds',
    help: 'Time from the request\'s arrival to the start of its route handler (admission queue included)',
    buckets: QUEUE_BUCKETS,
    registers: [registry],
  })
  const renders = new Counter({
    name: 'spindle_http_renders_total',
    help: 'Requests that reached a route handler (cache hits and shed requests do not)',
    registers: [registry],
  })
  const cache = new Counter({
    name: 'spindle_cache_responses_total',
    help: 'Responses labelled by the HTTP cache, by outcome (hit, miss, stale, revalidated, bypass)',
    labelNames: ['outcome'],
    registers: [registry],
  })

  const series = new Map<string, { observe (value: number): void }>()
  app.addHook('preHandler', (request, _reply, done) => {
    // Fastify's not-found handler runs preHandler hooks too: a 404 renders nothing.
    if (request.routeOptions.url === undefined) { done(); return }
    const now = performance.now()
    const arrived = (request.raw as { [kArrivedAt]?: number })[kArrivedAt]
    if (arrived !== undefined) queueDelay.observe((now - arrived) / 1000)
    renders.inc()
    done()
  })
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    const arrived = (request.raw as { [kArrivedAt]?: number })[kArrivedAt]
    const ms = arrived === undefined ? reply.elapsedTime : performance.now() - arrived
    // A 404 has no route pattern; the raw URL would give every probe its own series.
    const route = request.routeOptions.url ?? 'unmatched'
    const status = statusClass(reply.statusCode)
    // prom-client hashes the label object on every observe; one child per series skips that.
    const key = route + '\0' + status
    let child = series.get(key)
    if (!child) {
      child = duration.labels({ route, status_class: status })
      series.set(key, child)
    }
    child.observe(ms / 1000)
    const outcome = reply.getHeader(CACHE_HEADER)
    if (typeof outcome === 'string' && CACHE_OUTCOMES.has(outcome)) cache.inc({ outcome: outcome.toLowerCase() })
    done()
  })

  return { registry, snapshot: () => registry.getMetricsAsJSON() as Promise<MetricObjectWithValues<MetricValue<string>>[]> }
}
