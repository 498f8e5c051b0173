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

beforeAll(async () => {
  buildApp()
  fastify = Fastify()
  await fastify.register(httpCache, { store: createSharedStore({ maxBytes: 16 * 1024 * 1024 }) })
  await fastify.register(nextAdapter, { dir: appDir })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
}, 300_000)

afterAll(async () => { await fastify?.close() })

describe('nextAdapter with httpCache in front', () => {
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
