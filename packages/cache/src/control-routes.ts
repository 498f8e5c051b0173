import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { invalidOption as fail } from './errors.ts'
import { controlRoutesSchema } from './option-schema.ts'
import { optionChecker } from '@spindle/options'
import { fleetStoreOf } from './fleet/registry.ts'
import { purge, type PurgeRequest } from './purge.ts'
import type { SharedStore } from './shared-store.ts'

type ControlHandler = (req: IncomingMessage, res: ServerResponse) => void

const MAX_BODY = 1024 * 1024

function json (res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/** The environment variable read for the purge token when the `token` option is not given. */
export const PURGE_TOKEN_ENV = 'SPINDLE_CACHE_PURGE_TOKEN'

export interface CacheControlRoutesOptions {
  /** Path prefix of the routes. Default '/cache'. */
  prefix?: string
  /**
   * The secret a purge must present as `Authorization: Bearer <token>` (at least 16
   * characters). Default: the SPINDLE_CACHE_PURGE_TOKEN environment variable. Without
   * either, every purge is refused with 401.
   */
  token?: string
}

const checkControlRoutesOptions = optionChecker(controlRoutesSchema, fail)

const digest = (text: string): Buffer => createHash('sha256').update(text).digest()

/** Why a purge request must be refused (status and message), or undefined when it may run. */
function refusal (req: IncomingMessage, token: Buffer | undefined): [number, string] | undefined {
  // A browser tricked into posting here sends one of these; curl, deploy hooks and Next.js do not.
  const site = req.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return [403, 'cross-site request refused']
  const origin = req.headers.origin
  if (origin !== undefined && (!URL.canParse(origin) || new URL(origin).host !== req.headers.host)) return [403, 'cross-origin request refused']
  // A form or a "simple" cross-site fetch cannot send this content type without a preflight.
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') return [415, 'content-type must be application/json']
  if (token === undefined) return [401, `purging needs a token: set the token option or ${PURGE_TOKEN_ENV}`]
  const auth = req.headers.authorization
  const given = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7).trim() : undefined
  if (given === undefined || !timingSafeEqual(digest(given), token)) return [401, 'missing or wrong bearer token']
  return undefined
}

/**
 * Routes for the runtime's control server (`serve({ controlRoutes })`), which runs in the
 * main thread where the store was created:
 * `POST {prefix}/purge` with a JSON body `{ keys?, tags?, paths? }` (bearer token,
 * `content-type: application/json`, never cross-site), and `GET {prefix}/stats`.
 */
export function cacheControlRoutes (store: SharedStore, options: CacheControlRoutesOptions = {}): Record<string, ControlHandler> {
  checkControlRoutesOptions(options)
  const prefix = options.prefix ?? '/cache'
  // Not in the schema: the variable counts too, and a secret is never shown in a message.
  const secret = options.token ?? process.env[PURGE_TOKEN_ENV]
  if (secret !== undefined && secret.length < 16) fail(`token (or ${PURGE_TOKEN_ENV}) must be a string of at least 16 characters`)
  const token = secret === undefined ? undefined : digest(secret)
  return {
    [`POST ${prefix}/purge`]: (req, res) => {
      const refused = refusal(req, token)
      if (refused) {
        json(res, refused[0], { error: refused[1] })
        req.resume()
        return
      }
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
          // With a fleet tier in front of this memory, the purge goes through it: to Redis and every process.
          json(res, 200, purge(fleetStoreOf(store) ?? store, body))
        } catch (err) {
          const e = err as Error & { statusCode?: number, code?: string }
          json(res, e.statusCode ?? 500, { error: e.message, code: e.code })
        }
      })
    },
    [`GET ${prefix}/stats`]: (_req, res) => json(res, 200, store.stats()),
  }
}
