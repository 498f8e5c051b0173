import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { ControlHandler } from './options.ts'
import type { Supervisor } from './supervisor.ts'

/**
 * The control server runs on the main thread, which never runs app code, so it answers
 * health probes within milliseconds even when every worker's event loop is blocked.
 */
export function createControlServer (supervisor: Supervisor, extra: Readonly<Record<string, ControlHandler>>, info: () => object, extraMetrics?: () => string): Server {
  const json = (res: ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }

  const routes: Record<string, ControlHandler> = {
    'GET /healthz': (_req, res) => json(res, 200, { status: 'ok' }),
    'GET /readyz': (_req, res) => {
      const ready = supervisor.isReady()
      json(res, ready ? 200 : 503, {
        status: ready ? 'ready' : 'not-ready',
        readyWorkers: supervisor.readyWorkers(),
        shuttingDown: supervisor.closing,
      })
    },
    'GET /status': (_req, res) => json(res, 200, {
      ...info(),
      ready: supervisor.isReady(),
      shuttingDown: supervisor.closing,
      readyWorkers: supervisor.readyWorkers(),
      workers: supervisor.status(),
    }),
    'GET /metrics': (_req, res) => {
      const body = metrics(supervisor) + (extraMetrics?.() ?? '')
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' })
      res.end(body)
    },
    ...extra,
  }

  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]
    const method = req.method === 'HEAD' ? 'GET' : req.method
    const handler = routes[`${method} ${path}`]
    if (handler) {
      try {
        handler(req, res)
      } catch (err) {
        if (!res.headersSent) json(res, 500, { error: (err as Error).message })
        else res.destroy()
      }
      return
    }
    const known = Object.keys(routes).some((k) => k.endsWith(` ${path}`))
    json(res, known ? 405 : 404, { error: known ? 'method not allowed' : 'not found' })
  })
}

function metrics (supervisor: Supervisor): string {
  const lines: string[] = []
  const metric = (name: string, type: string, help: string, samples: Array<[string, number]>): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
    for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`)
  }
  const workers = supervisor.status()
  metric('spindle_ready', 'gauge', '1 when the server is ready for traffic', [['', supervisor.isReady() ? 1 : 0]])
  metric('spindle_workers_ready', 'gauge', 'Workers ready for traffic', [['', supervisor.readyWorkers()]])
  const per = (pick: (w: typeof workers[number]) => number): Array<[string, number]> =>
    workers.map((w) => [`{worker="${w.id}"}`, pick(w)])
  metric('spindle_worker_event_loop_utilization', 'gauge', 'Event-loop utilization over the last check', per((w) => w.elu))
  metric('spindle_worker_heap_used_bytes', 'gauge', 'V8 heap in use', per((w) => w.heapUsed ?? 0))
  metric('spindle_worker_requests_in_flight', 'gauge', 'Requests whose response has not closed', per((w) => w.inflight))
  metric('spindle_worker_restarts_total', 'counter', 'Times the worker slot was restarted or replaced', per((w) => w.restarts))
  lines.push('# HELP spindle_worker_shed_requests_total Requests answered 503 by load shedding, by reason', '# TYPE spindle_worker_shed_requests_total counter')
  for (const w of workers) {
    for (const [reason, n] of Object.entries(w.shed)) lines.push(`spindle_worker_shed_requests_total{worker="${w.id}",reason="${reason}"} ${n}`)
  }
  return lines.join('\n') + '\n'
}
