import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { createSharedStore, httpCache } from '@spindle/cache'
import { nextAdapter } from '@spindle/next'
import { buildFixture } from './fixtures/build.ts'

// A Pages Router app with i18n and locale detection on: Next answers `/` by the visitor's
// Accept-Language and NEXT_LOCALE cookie (the English page, or a 307 to `/fr`, `/de`).
const dir = fileURLToPath(new URL('./fixtures/i18n-app/', import.meta.url))

beforeAll(() => { buildFixture(dir) }, 300_000)

describe.each([0, 1])('nextAdapter with i18n behind httpCache, threads: %i', (threads) => {
  let fastify: FastifyInstance
  let base: string

  beforeAll(async () => {
    fastify = Fastify()
    await fastify.register(httpCache, { store: createSharedStore({ maxBytes: 16 * 1024 * 1024 }) })
    await fastify.register(nextAdapter, { dir, threads })
    await fastify.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
  }, 240_000)

  afterAll(async () => { await fastify?.close() })

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await request(base + path, { headers })
    const body = await res.body.text()
    return { status: res.statusCode, location: res.headers.location, vary: String(res.headers.vary), cache: res.headers['x-cache'], body }
  }
  const fields = (vary: string) => vary.split(',').map((f) => f.trim().toLowerCase())

  it('never serves the stored default-locale root to a visitor Next redirects to their locale', async () => {
    const en = await get('/')
    expect(en.status).toBe(200)
    expect(en.body).toContain('locale=<!-- -->en')
    // The page Next sends is cacheable: the cache stores it.
    expect((await get('/')).cache).toBe('HIT')

    const fr = await get('/', { 'accept-language': 'fr' })
    expect([fr.status, fr.location]).toEqual([307, '/fr'])
    const de = await get('/', { cookie: 'NEXT_LOCALE=de' })
    expect([de.status, de.location]).toEqual([307, '/de'])
    // What varies the root's answer is named, along with what Next named itself, each once.
    expect(fields(en.vary)).toEqual(expect.arrayContaining(['accept-encoding', 'accept-language', 'cookie']))
    expect(new Set(fields(en.vary)).size).toBe(fields(en.vary).length)
    expect(fields(fr.vary)).toEqual(expect.arrayContaining(['accept-language', 'cookie']))
    // With a query too.
    await get('/?a=1')
    const frQuery = await get('/?a=1', { 'accept-language': 'fr' })
    expect([frQuery.status, frQuery.location]).toEqual([307, '/fr?a=1'])

    // The English visitor still gets the stored English page.
    const again = await get('/')
    expect([again.status, again.cache]).toEqual([200, 'HIT'])
    expect(again.body).toContain('locale=<!-- -->en')
  })

  it('leaves the Vary of other paths as Next sent it', async () => {
    const other = await get('/other')
    expect(other.status).toBe(200)
    expect(fields(other.vary)).not.toContain('accept-language')
    expect(fields(other.vary)).not.toContain('cookie')
    const fr = await get('/fr/other', { 'accept-language': 'de' })
    expect(fr.body).toContain('locale=<!-- -->fr')
    expect(fields(fr.vary)).not.toContain('accept-language')
  })
})
