import type { IncomingMessage, ServerResponse } from 'node:http'
import { purge, type PurgeRequest } from './purge.ts'
import type { SharedStore } from './shared-store.ts'

type ControlHandler = (req: IncomingMessage, res: ServerResponse) => void

const MAX_BODY = 1024 * 1024

function json (res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/**
 * Routes for the runtime's control server (`serve({ controlRoutes })`), which runs in the
 * main thread where the store was created:
 * `POST {prefix}/purge` with a JSON body `{ keys?, tags?, paths? }`, and `GET {prefix}/stats`.
 */
export function cacheControlRoutes (store: SharedStore, options: { prefix?: string } = {}): Record<string, ControlHandler> {
  const prefix = options.prefix ?? '/cache'
  return {
    [`POST ${prefix}/purge`]: (req, res) => {
      const chunks: Buffer[] = []
      let size = 0
      req.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_BODY) { json(res, 413, { error: 'body too large' }); req.destroy() } else chunks.push(chunk)
      })
      req.on('end', () => {
        if (res.headersSent) return
        let body: PurgeRequest
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as PurgeRequest
        } catch {
          json(res, 400, { error: 'body must be JSON' })
          return
        }
        try {
          json(res, 200, purge(store, body))
        } catch (err) {
          const e = err as Error & { statusCode?: number, code?: string }
          json(res, e.statusCode ?? 500, { error: e.message, code: e.code })
        }
      })
    },
    [`GET ${prefix}/stats`]: (_req, res) => json(res, 200, store.stats()),
  }
}
