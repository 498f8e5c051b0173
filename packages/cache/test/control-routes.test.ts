import { afterEach, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { cacheControlRoutes, createSharedStore } from '@spindle/cache'
import { get } from './helpers.ts'

const TOKEN = 'a-test-purge-token-0123456789'
let server: Server | undefined
afterEach(() => {
  server?.close()
  server = undefined
})

/** The routes on a real HTTP server, dispatched as the runtime's control server does. */
async function serveRoutes (routes: ReturnType<typeof cacheControlRoutes>): Promise<string> {
  server = createServer((req, res) => {
    const handler = routes[`${req.method} ${req.url}`]
    if (handler) handler(req, res)
    else res.writeHead(404).end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('the purge control route', () => {
  it('purges only with the bearer token, as JSON, and never cross-site', async () => {
    const store = createSharedStore({ maxBytes: 1024 * 1024 })
    const url = await serveRoutes(cacheControlRoutes(store, { token: TOKEN }))
    const body = '{"tags":["a"]}'
    const json = { 'content-type': 'application/json' }
    const auth = { authorization: `Bearer ${TOKEN}` }
    const post = (headers: Record<string, string>): Promise<number> => get(`${url}/cache/purge`, { method: 'POST', headers, body }).then((r) => r.status)
    expect(await post(json)).toBe(401)
    expect(await post({ ...json, authorization: 'Bearer wrong-token-of-some-length' })).toBe(401)
    // What a hostile page can make a browser send: a form post, or a fetch marked cross-site.
    expect(await post({ 'content-type': 'text/plain', ...auth })).toBe(415)
    expect(await post({ 'content-type': 'application/x-www-form-urlencoded', ...auth })).toBe(415)
    expect(await post({ ...json, ...auth, 'sec-fetch-site': 'cross-site' })).toBe(403)
    expect(await post({ ...json, ...auth, origin: 'https://evil.example' })).toBe(403)
    expect(await post({ ...json, ...auth })).toBe(200)
    expect(store.tagsRevalidatedAt(['a'])).toBeGreaterThan(0)
  })

  it('refuses every purge when no token is configured, and rejects a short token at start-up', async () => {
    const store = createSharedStore({ maxBytes: 1024 * 1024 })
    const before = process.env.SPINDLE_CACHE_PURGE_TOKEN
    delete process.env.SPINDLE_CACHE_PURGE_TOKEN
    try {
      const url = await serveRoutes(cacheControlRoutes(store))
      const res = await get(`${url}/cache/purge`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"tags":["a"]}' })
      expect(res.status).toBe(401)
      expect(res.text).toContain('SPINDLE_CACHE_PURGE_TOKEN')
      expect(store.tagsRevalidatedAt(['a'])).toBe(0)
      expect(() => cacheControlRoutes(store, { token: 'short' })).toThrow(/at least 16/)
      const invalid = (message: string) => expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_OPTION', message })
      expect(() => cacheControlRoutes(store, { token: 12 as never })).toThrow(invalid('token must be a string of at least 16 characters, got 12'))
      expect(() => cacheControlRoutes(store, { prefix: 'cache' })).toThrow(invalid("prefix must be a path starting with '/', or '', got \"cache\""))
      expect(() => cacheControlRoutes(store, { tokens: TOKEN } as never)).toThrow(invalid('unknown option "tokens"'))
    } finally {
      if (before !== undefined) process.env.SPINDLE_CACHE_PURGE_TOKEN = before
    }
  })
})
