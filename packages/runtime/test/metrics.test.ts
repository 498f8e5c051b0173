import { afterEach, describe, expect, it, vi } from 'vitest'
import { Agent } from 'node:http'
import { serve, type SpindleServer } from '@spindle/runtime'
import { fixture, get } from './helpers.ts'

const base = { app: fixture('app.js'), port: 0, controlPort: 0, handleSignals: false, host: '127.0.0.1', shedding: false } as const

let server: SpindleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** The value of one sample line of the exposition text, or undefined when it is absent. */
function sample (text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

/**
 * Until no worker has a request in flight. A client can read its answer a turn of the
 * worker's loop before the response closes there; until then a scrape may take the
 * figures the worker sent unasked (up to a second old) rather than ask it.
 */
async function settled (): Promise<void> {
  await vi.waitFor(() => { expect(server!.status().map((w) => w.inflight)).toEqual(server!.status().map(() => 0)) })
}

describe('/metrics on the control port', () => {
  it('counts every request in duration histograms by route pattern and status class, per worker and summed', async () => {
    server = await serve({ ...base, workers: 2 })
    // Fresh connections: the kernel spreads them over both workers.
    const served = new Map<number, number>()
    for (let i = 0; i < 40; i++) {
      const res = await get(server.url + '/')
      const id = res.json().worker.id as number
      served.set(id, (served.get(id) ?? 0) + 1)
    }
    for (let i = 0; i < 5; i++) expect((await get(server.url + '/no/such/page')).status).toBe(404)
    await settled()
    const text = (await get(server.controlUrl + '/metrics')).body

    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(40)
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="unmatched",status_class="4xx"}')).toBe(5)
    expect(sample(text, 'spindle_http_request_duration_seconds_bucket{le="+Inf",route="/",status_class="2xx"}')).toBe(40)
    for (const [id, n] of served) {
      expect(sample(text, `spindle_worker_http_request_duration_seconds_count{route="/",status_class="2xx",worker="${id}"}`)).toBe(n)
    }
    // Every request that reached a handler was a render; each waited a little in the queue.
    expect(sample(text, 'spindle_http_renders_total')).toBe(40)
    expect(sample(text, 'spindle_http_queue_delay_seconds_count')).toBe(40)
    expect(sample(text, 'spindle_workers_ready')).toBe(2)
    expect(sample(text, 'spindle_metrics_workers_unanswered')).toBe(0)
    expect(sample(text, 'spindle_worker_admission_state{worker="1",state="normal"}')).toBe(1)
    expect(sample(text, 'spindle_worker_admission_state{worker="1",state="shedding"}')).toBe(0)
    // prom-client's process metrics for the whole process.
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m)
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m)
  })

  it('labels requests by route pattern, also those an app-wide onRequest hook answered before their route\'s hooks ran', async () => {
    server = await serve({ ...base, workers: 1 })
    for (const id of ['1', '2', 'x']) expect((await get(`${server.url}/items/${id}`)).json()).toEqual({ id })
    expect((await get(server.url + '/items/3?deny=1')).status).toBe(401)
    expect((await get(server.url + '/env?name=HOME&deny=1')).status).toBe(401)
    // The app's hook does not cover the 404 handler, which is outside the app's plugin.
    expect((await get(server.url + '/no/such/page?deny=1')).status).toBe(404)
    await settled()
    const text = (await get(server.controlUrl + '/metrics')).body
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/items/:id",status_class="2xx"}')).toBe(3)
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/items/:id",status_class="4xx"}')).toBe(1)
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/env",status_class="4xx"}')).toBe(1)
    // No route matches: no pattern, and the raw URL would give every probe a series of its own.
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="unmatched",status_class="4xx"}')).toBe(1)
    expect(text).not.toContain('/items/3')
    expect(text).not.toContain('/no/such')
    // Only the three that reached their handler rendered.
    expect(sample(text, 'spindle_http_renders_total')).toBe(3)
  })

  it('takes a busy worker\'s figures sent unasked, without waiting for its loop, until they grow old', async () => {
    server = await serve({ ...base, workers: 1, heartbeatTimeout: 10_000, stallTimeout: 20_000 })
    for (let i = 0; i < 3; i++) expect((await get(server.url + '/')).status).toBe(200)
    // Past one sending interval (METRICS_PUSH_MS, 1 s): the worker has sent figures that count the three.
    await new Promise((resolve) => setTimeout(resolve, 1300))
    const spin = get(server.url + '/spin?ms=2600', { agent: new Agent({ keepAlive: false }) })
    await new Promise((resolve) => setTimeout(resolve, 300))
    // Its loop is in the middle of a request: asked, it could not answer for 2.3 s more.
    let text = (await get(server.controlUrl + '/metrics')).body
    expect(sample(text, 'spindle_requests_in_flight')).toBe(1)
    expect(sample(text, 'spindle_metrics_workers_unanswered')).toBe(0)
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(3)
    // Two intervals without a word from it: it is asked, does not answer, and is reported so.
    await new Promise((resolve) => setTimeout(resolve, 2000))
    text = (await get(server.controlUrl + '/metrics')).body
    expect(sample(text, 'spindle_metrics_workers_unanswered')).toBe(1)
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(3)
    expect((await spin).status).toBe(200)
    // Idle again: asked, it answers, and the figures are exact.
    await settled()
    text = (await get(server.controlUrl + '/metrics')).body
    expect(sample(text, 'spindle_metrics_workers_unanswered')).toBe(0)
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/spin",status_class="2xx"}')).toBe(1)
  })

  it('answers at once while a worker is stuck, with its last figures, and says it did not answer', async () => {
    server = await serve({ ...base, workers: 1, heartbeatTimeout: 5000, stallTimeout: 20_000, shutdownTimeout: 1000 })
    for (let i = 0; i < 3; i++) expect((await get(server.url + '/')).status).toBe(200)
    expect(sample((await get(server.controlUrl + '/metrics')).body, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(3)
    const agent = new Agent({ keepAlive: false })
    // The route answers, then its thread spins forever: the loop never reads its port again.
    await get(server.url + '/block', { agent })
    await new Promise((resolve) => setTimeout(resolve, 200))
    const started = Date.now()
    const res = await get(server.controlUrl + '/metrics')
    const took = Date.now() - started
    expect(res.status).toBe(200)
    expect(took).toBeLessThan(1000)
    expect(sample(res.body, 'spindle_metrics_workers_unanswered')).toBe(1)
    // The stuck worker's last figures stand in for it: counters never go backwards.
    expect(sample(res.body, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(3)

  })

  it('shows a stuck worker\'s figures from what it sent, with no scrape before it stuck', async () => {
    server = await serve({ ...base, workers: 1, heartbeatTimeout: 5000, stallTimeout: 20_000, shutdownTimeout: 1000 })
    for (let i = 0; i < 5; i++) expect((await get(server.url + '/')).status).toBe(200)
    // The worker sends its figures every second, unasked; then its loop stops for good.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    await get(server.url + '/block', { agent: new Agent({ keepAlive: false }) })
    await new Promise((resolve) => setTimeout(resolve, 200))
    const res = await get(server.controlUrl + '/metrics')
    expect(sample(res.body, 'spindle_metrics_workers_unanswered')).toBe(1)
    expect(sample(res.body, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(5)
  })

  it('never sets a counter back when workers are replaced: request and shed counts carry over a rolling restart', async () => {
    // Every render is shed while the heap holds more than one byte (any heap does), before
    // routing (their route is 'unmatched').
    server = await serve({ ...base, workers: 2, warmup: false, shedding: { maxHeapUsedBytes: 1, sampleInterval: 20, retryHold: 0 } })
    const counts = async (): Promise<{ shed: number | undefined, answered: number | undefined, perWorker: number }> => {
      const text = (await get(server!.controlUrl + '/metrics')).body
      return {
        shed: sample(text, 'spindle_shed_requests_total{reason="heapUsedBytes"}'),
        answered: sample(text, 'spindle_http_request_duration_seconds_count{route="unmatched",status_class="5xx"}'),
        perWorker: [1, 2].reduce((n, id) => n + (sample(text, `spindle_worker_shed_requests_total{worker="${id}",reason="heapUsedBytes"}`) ?? 0), 0),
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
    for (let i = 0; i < 20; i++) expect((await get(server.url + '/render')).status).toBe(503)
    await settled()
    expect(await counts()).toEqual({ shed: 20, answered: 20, perWorker: 20 })
    const before = server.status().map((w) => w.generation)

    // Scraped all through the restart (replacements starting, replaced workers draining)
    // and after it, the totals stay.
    let restarted = false
    const restart = server.restart().then(() => { restarted = true })
    const seen: Array<{ shed: number | undefined, answered: number | undefined, perWorker: number }> = []
    while (!restarted) {
      seen.push(await counts())
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await restart
    expect(seen.length).toBeGreaterThan(2)
    expect(seen.filter((c) => c.shed !== 20 || c.answered !== 20 || c.perWorker !== 20)).toEqual([])
    expect(server.status().map((w) => w.generation)).not.toEqual(before)
    expect(await counts()).toEqual({ shed: 20, answered: 20, perWorker: 20 })
    expect(sample((await get(server.controlUrl + '/metrics')).body, 'spindle_metrics_workers_unanswered')).toBe(0)
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (let i = 0; i < 5; i++) expect((await get(server.url + '/render')).status).toBe(503)
    await settled()
    expect(await counts()).toEqual({ shed: 25, answered: 25, perWorker: 25 })
    expect(server.status().reduce((n, w) => n + w.shed.heapUsedBytes, 0)).toBe(25)
  })

  it('keeps every request of a replaced worker, also those it served after the last scrape', async () => {
    server = await serve({ ...base, workers: 2, warmup: false })
    const agent = new Agent({ keepAlive: false })
    for (let i = 0; i < 30; i++) expect((await get(server.url + '/', { agent })).status).toBe(200)
    // No scrape before the rolling restart: the replaced workers' figures come from what
    // each sent once it had drained.
    await server.restart()
    await settled()
    const text = (await get(server.controlUrl + '/metrics')).body
    expect(sample(text, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(30)
    expect(sample(text, 'spindle_metrics_workers_unanswered')).toBe(0)
    for (let i = 0; i < 10; i++) expect((await get(server.url + '/', { agent })).status).toBe(200)
    await settled()
    expect(sample((await get(server.controlUrl + '/metrics')).body, 'spindle_http_request_duration_seconds_count{route="/",status_class="2xx"}')).toBe(40)
  })

  it('keeps no request metrics with metrics: false', async () => {
    server = await serve({ ...base, workers: 1, metrics: false })
    for (let i = 0; i < 5; i++) expect((await get(server.url + '/')).status).toBe(200)
    const text = (await get(server.controlUrl + '/metrics')).body
    expect(text).not.toMatch(/spindle_http_request_duration_seconds/)
    expect(sample(text, 'spindle_workers_ready')).toBe(1)
  })
})
