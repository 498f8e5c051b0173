// An app with `basePath: '/docs'` through the adapter: its pages and assets live under the
// base path, nothing else is Next's, and the user's own routes still win.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { nextAdapter } from '@spindle/next'
import { buildFixture } from './fixtures/build.ts'

const dir = fileURLToPath(new URL('./fixtures/basepath-app/', import.meta.url))
let fastify: FastifyInstance
let base: string

beforeAll(async () => {
  buildFixture(dir)
  fastify = Fastify()
  fastify.get('/docs/own', async () => ({ route: 'own, under the base path' }))
  await fastify.register(nextAdapter, { dir })
  fastify.get('/outside', async () => ({ route: 'outside the base path' }))
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
})

afterAll(async () => { await fastify?.close() })

async function get (path: string) {
  const res = await request(base + path)
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('nextAdapter with basePath', () => {
  it('renders pages under the base path and serves their static chunks immutable from there', async () => {
    const home = await get('/docs')
    expect(home.status).toBe(200)
    expect(home.body).toContain('docs home under a base path')
    const chunk = /\/docs\/_next\/static\/[^"]+\.js/.exec(home.body)?.[0]
    expect(chunk).toBeDefined()
    const asset = await get(chunk!)
    expect(asset.status).toBe(200)
    expect(asset.headers['cache-control']).toContain('immutable')
    // The same asset without the base path is not Next's.
    expect((await get(chunk!.slice('/docs'.length))).status).toBe(404)
  })

  it('answers 404 outside the base path', async () => {
    for (const path of ['/', '/some-page']) {
      const res = await get(path)
      expect(res.status, path).toBe(404)
      expect(res.body).not.toContain('docs home under a base path')
    }
  })

  it("lets the user's routes win, inside and outside the base path", async () => {
    expect(JSON.parse((await get('/docs/own')).body)).toEqual({ route: 'own, under the base path' })
    expect(JSON.parse((await get('/outside')).body)).toEqual({ route: 'outside the base path' })
  })
})
