import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { createSharedStore, httpCache } from '@spindle/cache'
import { nextAdapter } from '@spindle/next'
import { appDir, buildApp } from './fixtures/build.ts'

let fastify: FastifyInstance
let base: string
/** The same app without the cache: what each request should get. */
let plain: FastifyInstance
let plainBase: string

beforeAll(async () => {
  buildApp()
  fastify = Fastify()
  await fastify.register(httpCache, { store: createSharedStore({ maxBytes: 16 * 1024 * 1024 }) })
  await fastify.register(nextAdapter, { dir: appDir })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
  plain = Fastify()
  await plain.register(nextAdapter, { dir: appDir })
  await plain.listen({ port: 0, host: '127.0.0.1' })
  plainBase = `http://127.0.0.1:${(plain.server.address() as { port: number }).port}`
}, 300_000)

afterAll(async () => {
  await fastify?.close()
  await plain?.close()
})

/**
 * Request headers Next.js reads to answer otherwise (an RSC payload, a prefetch, a data
 * request, an internal rewrite or status), forwarded-URL headers and credentials: sent by
 * a hostile client first, they must not change what the next client gets.
 */
const HOSTILE: Array<Record<string, string>> = [
  { rsc: '1' }, { rsc: '1', 'next-router-prefetch': '1' }, { 'next-router-prefetch': '1' },
  { rsc: '1', 'next-router-segment-prefetch': '/_tree' }, { 'next-router-state-tree': '%5B%22%22%2C%7B%7D%5D' },
  { 'next-url': '/static' }, { 'x-nextjs-data': '1' }, { 'x-now-route-matches': '1' }, { 'x-middleware-prefetch': '1' },
  { purpose: 'prefetch' }, { accept: 'text/x-component' }, { 'x-matched-path': '/static' }, { 'x-invoke-path': '/static' },
  { 'x-invoke-status': '404' }, { 'x-middleware-subrequest': 'middleware:middleware:middleware:middleware:middleware' },
  { 'x-middleware-rewrite': '/static' }, { 'x-nextjs-rewrite': '/static' }, { 'x-deployment-id': 'other' },
  { 'next-action': 'abc' }, { 'x-http-method-override': 'POST' }, { 'accept-encoding': 'gzip' },
  { 'x-forwarded-host': 'evil.test' }, { 'x-forwarded-proto': 'http' }, { cookie: 'session=alice' }, { authorization: 'Bearer alice' },
]

describe('nextAdapter with httpCache in front', () => {
  it('serves every client what Next gives it, whatever a hostile request sent before', async () => {
    const answer = async (url: string, headers: Record<string, string> = {}) => {
      const res = await request(url, { headers })
      const body = await res.body.text()
      return { status: res.statusCode, type: String(res.headers['content-type']), start: body.slice(0, 64), cache: String(res.headers['x-cache']), location: res.headers.location }
    }
    let hits = 0
    let rscFollowed = 0
    for (const page of ['/', '/static']) {
      for (const headers of HOSTILE) {
        // Next sends a request for its RSC payload to the URL with the matching `_rsc`
        // parameter first (asked of the server without a cache): the hostile client goes
        // there, so the payload would be stored under the URL the next client asks for.
        let path = page
        const redirect = (await answer(plainBase + page, headers)).location
        if (typeof redirect === 'string' && redirect.includes('_rsc=')) {
          const to = new URL(redirect, base)
          path = to.pathname + to.search
        }
        await answer(base + path, headers)
        const got = await answer(base + path)
        const want = await answer(plainBase + path)
        if (got.cache === 'HIT') hits++
        expect([got.status, got.type, got.start], `${path} after ${JSON.stringify(headers)} (${got.cache})`).toEqual([want.status, want.type, want.start])
        if (path !== page) rscFollowed++
      }
    }
    // Pages were answered from the cache, so stored responses met the requests that followed.
    expect(hits).toBeGreaterThan(HOSTILE.length)
    // And RSC payloads were stored beside the pages' HTML, under the same URLs.
    expect(rscFollowed).toBeGreaterThan(2)
  })

  it('puts the build ID in every key, so a redeployed build never serves the old HTML', async () => {
    const buildId = readFileSync(join(appDir, '.next', 'BUILD_ID'), 'utf8').trim()
    const key = fastify.httpCache.keyOf({ url: '/', headers: { host: '127.0.0.1' }, encrypted: false })
    expect(key).toContain(buildId)
    const page = async (): Promise<string> => {
      const res = await request(`${base}/`)
      await res.body.dump()
      expect(res.statusCode).toBe(200)
      return String(res.headers['x-cache'])
    }
    await page()
    expect(await page()).toBe('HIT')
    // What a redeploy does to each new worker: another build, so the old page is not found.
    fastify.httpCache.setBuildId('another-build')
    expect(fastify.httpCache.keyOf({ url: '/', headers: { host: '127.0.0.1' }, encrypted: false })).not.toContain(buildId)
    expect(await page()).toBe('MISS')
  })
})
