import { Agent } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { serve, type SpindleServer } from '@spindle/runtime'
import { newBalanceState, observeLoad, pickHandoff, type BalanceState } from '../src/balance.ts'
import { workerYoungGenerationMb } from '../src/v8-young.ts'
import { fixture, get, type Answer } from './helpers.ts'

const base = { app: fixture('app.js'), port: 0, controlPort: 0, handleSignals: false, host: '127.0.0.1', workers: 2, shedding: false } as const

let server: SpindleServer | undefined
const agents: Agent[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy()
  await server?.close()
  server = undefined
})

function loaded (load: number): BalanceState {
  const s = newBalanceState()
  for (let i = 0; i < 60; i++) observeLoad(s, load)
  return s
}

describe('connection balance policy', () => {
  it('picks the busiest worker only when it is hot and another is clearly less busy', () => {
    expect(pickHandoff([loaded(0.95), loaded(0.6)], 0)).toBe(0)
    expect(pickHandoff([loaded(0.5), loaded(0.3), loaded(0.98)], 0)).toBe(2)
    // Equally busy (saturated or not), or not hot: nothing moves.
    expect(pickHandoff([loaded(1), loaded(1)], 0)).toBe(-1)
    expect(pickHandoff([loaded(0.6), loaded(0.2)], 0)).toBe(-1)
    expect(pickHandoff([loaded(0.9), loaded(0.85)], 0)).toBe(-1)
    expect(pickHandoff([loaded(1)], 0)).toBe(-1)
  })

  it('hands off at most one connection per worker every 100 ms', () => {
    const states = [loaded(1), loaded(0.2)]
    expect(pickHandoff(states, 1000)).toBe(0)
    expect(pickHandoff(states, 1050)).toBe(-1)
    expect(pickHandoff(states, 1100)).toBe(0)
  })

  it('smooths utilization samples', () => {
    const s = newBalanceState()
    observeLoad(s, 1)
    expect(s.load).toBeGreaterThan(0)
    expect(s.load).toBeLessThan(0.5)
  })
})

/** Keep-alive agents with one connection each, sorted by the worker thread that got the connection. */
async function connectionsByThread (url: string, count: number): Promise<Map<number, Agent[]>> {
  const byThread = new Map<number, Agent[]>()
  for (let i = 0; i < count; i++) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    agents.push(agent)
    const thread = (await get(url + '/', { agent })).json().thread as number
    byThread.set(thread, [...(byThread.get(thread) ?? []), agent])
  }
  return byThread
}

/** Sends CPU-heavy requests over the given connections until `stop` says so; collects the answers. */
async function drive (url: string, hot: Agent[], until: (answers: Answer[]) => boolean, maxMs: number): Promise<Answer[]> {
  const answers: Answer[] = []
  const deadline = Date.now() + maxMs
  await Promise.all(hot.map(async (agent) => {
    while (Date.now() < deadline && !until(answers)) answers.push(await get(url + '/busy?ms=40', { agent }))
  }))
  return answers
}

describe('connection balance in runtime workers', () => {
  it('moves keep-alive connections off a worker that is busier than its sibling', async () => {
    server = await serve(base)
    const byThread = await connectionsByThread(server.url, 12)
    const [hotThread, hot] = [...byThread].sort((a, b) => b[1].length - a[1].length)[0]!
    // Only the connections on one worker carry load: it is busy, its sibling idles.
    const answers = await drive(server.url, hot, (a) => a.some((x) => x.json().thread !== hotThread), 15_000)
    const closing = answers.filter((a) => a.headers.connection === 'close')
    expect(closing.length).toBeGreaterThan(0)
    expect(closing.every((a) => a.json().thread === hotThread)).toBe(true)
    // A reconnection landed on the other worker.
    expect(answers.some((a) => a.json().thread !== hotThread)).toBe(true)
    const status = server.status()
    const hotStatus = status.find((w) => w.threadId === hotThread)!
    expect(hotStatus.handedOff).toBeGreaterThanOrEqual(closing.length)
    const control = (await get(server.controlUrl! + '/status')).json()
    expect(control.workers.find((w: { threadId: number }) => w.threadId === hotThread).handedOff).toBeGreaterThan(0)
  }, 30_000)

  it('keeps every connection where it is with balanceConnections: false', async () => {
    server = await serve({ ...base, balanceConnections: false })
    const byThread = await connectionsByThread(server.url, 8)
    const [hotThread, hot] = [...byThread].sort((a, b) => b[1].length - a[1].length)[0]!
    const answers = await drive(server.url, hot, () => false, 2500)
    expect(answers.length).toBeGreaterThan(10)
    expect(answers.filter((a) => a.headers.connection === 'close')).toEqual([])
    expect(answers.every((a) => a.json().thread === hotThread)).toBe(true)
    expect(server.status().every((w) => w.handedOff === 0)).toBe(true)
  }, 30_000)

  it('sizes the young generation of every worker with youngGenerationMb', async () => {
    server = await serve({ ...base, youngGenerationMb: 12 })
    const small = (await get(server.url + '/young')).json().newSpaceBytes as number
    expect(small).toBeGreaterThan(0)
    expect(small).toBeLessThanOrEqual(8 * 1024 * 1024)
  }, 30_000)

  it('gives workers at most a 96 MB young generation by default and V8\'s own with youngGenerationMb: 0', async () => {
    const own = await workerYoungGenerationMb() as number
    expect(own).toBeGreaterThan(0)
    server = await serve(base)
    expect((await get(server.url + '/young')).json().youngGenerationMb).toBe(Math.min(96, own))
    await server.close()
    server = undefined
    server = await serve({ ...base, youngGenerationMb: 0 })
    expect((await get(server.url + '/young')).json().youngGenerationMb).toBe(own)
  }, 30_000)
})
