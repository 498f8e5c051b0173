import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { ControlMetrics } from './metrics/control-metrics.ts'
import type { ControlHandler } from './options.ts'
import type { Supervisor } from './supervisor.ts'

const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

/**
 * The control server runs on the main thread, which never runs app code, so it answers
 * health probes within milliseconds even when every worker's event loop is blocked.
 */
export function createControlServer (supervisor: Supervisor, extra: Readonly<Record<string, ControlHandler>>, info: () => object, extraMetrics?: () => string): Server {
  const metrics = new ControlMetrics(supervisor, extraMetrics)
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
      restarting: supervisor.restarting,
      readyWorkers: supervisor.readyWorkers(),
      workers: supervisor.status(),
    }),
    'GET /metrics': (req, res) => {
      if (req.method === 'HEAD') {
        // The head alone: no worker is asked for figures only to throw them away.
        res.writeHead(200, { 'content-type': METRICS_TYPE, 'cache-control': 'no-store' })
        res.end()
        return
      }
      metrics.text().then((body) => {
        res.writeHead(200, { 'content-type': METRICS_TYPE, 'cache-control': 'no-store' })
        res.end(body)
      }, (err: unknown) => json(res, 500, { error: (err as Error).message }))
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
    const allowed = Object.keys(routes).filter((k) => k.endsWith(` ${path}`)).map((k) => k.slice(0, k.indexOf(' ')))
    if (allowed.length === 0) return json(res, 404, { error: 'not found' })
    // RFC 9110 15.5.6: a 405 names the methods the route takes (GET brings HEAD).
    if (allowed.includes('GET')) allowed.push('HEAD')
    res.setHeader('allow', allowed.join(', '))
    json(res, 405, { error: 'method not allowed' })
  })
}
