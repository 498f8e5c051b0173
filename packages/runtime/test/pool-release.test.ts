import { afterEach, describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { httpCache } from '@spindle/cache'
import { buffersFreedWhenWritten } from '../src/pool/release.ts'

const PAGE = 'x'.repeat(45_000)

let app: FastifyInstance | undefined
afterEach(async () => { await app?.close(); app = undefined })

/** A server whose `/page` sends a fresh ArrayBuffer's bytes, freeing them once written when no onSend hook can see them. */
async function serve (setup: (fastify: FastifyInstance) => void | Promise<void>): Promise<{ url: string, sent: Array<{ buffer: ArrayBuffer, private: boolean }> }> {
  const sent: Array<{ buffer: ArrayBuffer, private: boolean }> = []
  app = Fastify({ logger: false })
  await setup(app)
  app.get('/page', async (req, reply) => {
    const buffer = new TextEncoder().encode(PAGE).buffer
    const owned = buffersFreedWhenWritten(req, reply)
    owned?.push(buffer)
    sent.push({ buffer, private: owned !== undefined })
    return reply.type('text/html').header('cache-control', req.headers['x-cacheable'] ? 'public, max-age=60' : 'no-store').send(Buffer.from(buffer))
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/page`, sent }
}

describe('pool response buffers freed once written', () => {
  it('frees the body of a route no onSend hook sees, after the client got every byte', async () => {
    const { url, sent } = await serve(() => {})
    const res = await request(url)
    expect(await res.body.text()).toBe(PAGE)
    expect(sent).toHaveLength(1)
    expect(sent[0]!.private).toBe(true)
    expect(sent[0]!.buffer.detached).toBe(true)
  })

  it('leaves the body alone where an onSend hook may keep it, app-wide or on the route', async () => {
    const kept: Buffer[] = []
    const { url, sent } = await serve((fastify) => {
      fastify.addHook('onSend', async (_req, _reply, payload) => {
        if (Buffer.isBuffer(payload)) kept.push(payload)
        return payload
      })
    })
    for (let i = 0; i < 3; i++) expect(await (await request(url)).body.text()).toBe(PAGE)
    expect(sent.map((s) => s.private)).toEqual([false, false, false])
    // What the hook kept still reads whole after the responses ended.
    expect(kept.map((b) => b.toString())).toEqual([PAGE, PAGE, PAGE])

    await app!.close()
    const routeHook = await serve((fastify) => {
      fastify.addHook('onRoute', (route) => {
        route.onSend = [async (_req, _reply, payload) => payload]
      })
    })
    expect(await (await request(routeHook.url)).body.text()).toBe(PAGE)
    expect(routeHook.sent[0]!.private).toBe(false)
    expect(routeHook.sent[0]!.buffer.detached).toBe(false)
  })

  it('frees the body under the HTTP cache, which copies what it stores as the response is written', async () => {
    const { url, sent } = await serve(async (fastify) => {
      await fastify.register(httpCache, { storeOptions: { maxBytes: 4 * 1024 * 1024 } })
    })
    const first = await request(url, { headers: { 'x-cacheable': '1' } })
    expect(await first.body.text()).toBe(PAGE)
    expect(first.headers['x-cache']).toBe('MISS')
    expect(sent[0]!.private).toBe(true)
    expect(sent[0]!.buffer.detached).toBe(true)
    // The stored copy is whole: the hit is answered from it, the route not run again.
    const hit = await request(url, { headers: { 'x-cacheable': '1' } })
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(await hit.body.text()).toBe(PAGE)
    expect(sent).toHaveLength(1)
  })
})
