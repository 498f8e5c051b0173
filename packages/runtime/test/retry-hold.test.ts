import { Agent } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import { loadShedding } from '@spindle/runtime'
import { get } from './helpers.ts'

let app: FastifyInstance | undefined
const agents: Agent[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy()
  await app?.close()
  app = undefined
})

/** A server that sheds every render: any heap is above one byte once sampling is armed. */
async function alwaysShedding (retryHold?: number): Promise<string> {
  app = Fastify()
  await app.register(loadShedding, { maxHeapUsedBytes: 1, sampleInterval: 50, ...(retryHold === undefined ? {} : { retryHold }) })
  app.get('/render', async () => 'rendered\n')
  await app.listen({ port: 0, host: '127.0.0.1' })
  // Past the first two samples, which cover start-up and are not judged.
  await sleep(200)
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}/render`
}

/** One keep-alive connection that asks again the moment an answer arrives, for `ms`. */
async function retryLoop (url: string, ms: number): Promise<{ answers: number, statuses: Set<number>, gaps: number[] }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  agents.push(agent)
  const until = Date.now() + ms
  const statuses = new Set<number>()
  const gaps: number[] = []
  let answers = 0
  while (Date.now() < until) {
    const sent = performance.now()
    const res = await get(url, { agent, timeout: 5000 })
    gaps.push(performance.now() - sent)
    statuses.add(res.status)
    answers++
  }
  return { answers, statuses, gaps }
}

describe('a client that retries at once after a 503', () => {
  // The first 503s go out at once; once most arrivals are immediate retries (a retry storm:
  // at least 50 of them within the last second), each immediate retry waits for its 503.
  const STORM = 60

  it('gets its 503s at once until the worker sees a retry storm, then each next one only after retryHold', async () => {
    const url = await alwaysShedding(600)
    const { answers, statuses, gaps } = await retryLoop(url, 2000)
    expect([...statuses]).toEqual([503])
    expect(gaps[0]).toBeLessThan(400)
    const fast = gaps.filter((g) => g < 400).length
    expect(fast).toBeGreaterThanOrEqual(40)
    expect(fast).toBeLessThanOrEqual(STORM)
    // Held from the storm on: every later retry waits about 600 ms.
    for (const gap of gaps.slice(STORM)) expect(gap).toBeGreaterThanOrEqual(590)
    expect(answers).toBeLessThanOrEqual(STORM + 4)
    // A new connection is not held.
    const started = performance.now()
    expect((await get(url)).status).toBe(503)
    expect(performance.now() - started).toBeLessThan(400)
  })

  it('answers every retry at once with retryHold: 0', async () => {
    const url = await alwaysShedding(0)
    const { answers, statuses, gaps } = await retryLoop(url, 1000)
    expect([...statuses]).toEqual([503])
    expect(answers).toBeGreaterThan(STORM + 20)
    expect(gaps.filter((g) => g >= 240)).toEqual([])
  })

  it('holds an immediate retry in a storm for 250 ms by default', async () => {
    const url = await alwaysShedding()
    const { gaps } = await retryLoop(url, 1200)
    const first = gaps.findIndex((g) => g >= 240)
    // After at least the 50 rejections a storm needs (more when the machine is slow to make them).
    expect(first).toBeGreaterThanOrEqual(40)
    const held = gaps.slice(first)
    expect(held.length).toBeLessThanOrEqual(5)
    for (const gap of held) expect(gap).toBeGreaterThanOrEqual(240)
  })
})
