// In a Fastify server of your own, the adapter's pages take turns (two at a time, first come
// first served), so a turn of the event loop never runs every request it read back to back,
// and new connections are accepted (libuv takes one per turn) while the server is busy.
import { afterEach, describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import { Agent, request } from 'undici'
import { loadShedding } from '@spindle/runtime'
import { reactRouterAdapter } from '@spindle/react-router'
import { buildApp, serverBuild } from './fixtures/build.ts'

let fastify: FastifyInstance | undefined
const agents: Agent[] = []
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()))
  await fastify?.close()
  fastify = undefined
})

async function start (options: Record<string, unknown>, before?: (f: FastifyInstance) => Promise<void>): Promise<string> {
  buildApp()
  fastify = Fastify()
  await before?.(fastify)
  await fastify.register(reactRouterAdapter, { build: serverBuild, threads: 0, ...options })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
}

describe('reactRouterAdapter: render turns in a server of your own', () => {
  it('accepts new connections while 40 others keep the thread busy with renders that never wait', async () => {
    const base = await start({})
    expect(fastify!.hasPlugin('@spindle/render-turns')).toBe(true)
    const busy = new Agent({ connections: 40, pipelining: 1 })
    agents.push(busy)
    let running = true
    const loops = Array.from({ length: 40 }, async () => {
      while (running) await (await request(base + '/spin?ms=4', { dispatcher: busy })).body.text()
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    const started = performance.now()
    const firsts = await Promise.all(Array.from({ length: 10 }, async () => {
      const fresh = new Agent({ connections: 1 })
      agents.push(fresh)
      const res = await request(base + '/spin?ms=4', { dispatcher: fresh })
      await res.body.text()
      return { status: res.statusCode, ms: performance.now() - started }
    }))
    running = false
    await Promise.all(loops)
    expect(firsts.map((f) => f.status)).toEqual(Array(10).fill(200))
    // 40 renders of 4 ms ahead: about 160 ms. Without turns a loop turn ran all 40 and took
    // in one connection: the tenth waited about 1.6 s.
    expect(Math.max(...firsts.map((f) => f.ms))).toBeLessThan(800)
  }, 30_000)

  it('leaves the turns to loadShedding when the server has it, and gives none with renderTurns: false', async () => {
    await start({}, async (f) => { await f.register(loadShedding, {}) })
    expect(fastify!.hasPlugin('@spindle/render-turns')).toBe(false)
    await fastify!.close()
    await start({ renderTurns: false })
    expect(fastify!.hasPlugin('@spindle/render-turns')).toBe(false)
    await fastify!.close()
    await expect(start({ renderTurns: 'yes' })).rejects.toThrow(/renderTurns/)
  }, 60_000)
})
