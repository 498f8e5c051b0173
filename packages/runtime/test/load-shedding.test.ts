import { Agent } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import underPressure from '@fastify/under-pressure'
import { loadShedding, serve, type LoadSheddingOptions, type SpindleServer } from '@spindle/runtime'
import { fixture, get, waitFor } from './helpers.ts'

const base = { app: fixture('shed-app.js'), port: 0, controlPort: 0, handleSignals: false, host: '127.0.0.1', workers: 1 } as const
// Sensitive thresholds so a test creates pressure within a second on a shared machine.
const shedding = { maxEventLoopDelay: 40, sampleInterval: 50, unreadyAfter: 800 }

let server: SpindleServer | undefined
let app: FastifyInstance | undefined
const agents: Agent[] = []
afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy()
  await server?.close()
  await app?.close()
  server = undefined
  app = undefined
})

/** Keeps the worker's loop blocked in 150 ms slices (a route that is never shed) until stopped. */
function pressure (url: string): { stop: () => Promise<void> } {
  let running = true
  const loops = [0, 1, 2].map(async () => {
    while (running) await get(url + '/pressure?ms=150').catch(() => {})
  })
  return { stop: async () => { running = false; await Promise.all(loops) } }
}

/** Asks for a render every `every` ms until one is shed; returns that answer. */
async function firstShed (url: string, every: number): Promise<Awaited<ReturnType<typeof get>>> {
  return await waitFor('a render to be shed', async () => {
    const res = await get(url + '/render')
    return res.status === 503 ? res : undefined
  }, 10_000, every)
}

/** Waits until renders are served again. */
async function servedAgain (url: string): Promise<void> {
  await waitFor('renders to be served again', async () => (await get(url + '/render')).status === 200, 10_000, 50)
}

type Send = (path: string, n: number) => Promise<Array<Awaited<ReturnType<typeof get>>>>

/**
 * Opens `count` keep-alive connections to the server, so that a burst sent over them reaches the
 * worker at once rather than one connection handshake at a time; returns a sender of bursts.
 */
async function connections (url: string, count = 16): Promise<Send> {
  const agent = new Agent({ keepAlive: true, maxSockets: count })
  agents.push(agent)
  await Promise.all(Array.from({ length: count }, () => get(url + '/cached', { agent })))
  return async (path, n) => await Promise.all(Array.from({ length: n }, () => get(url + path, { agent })))
}

type Answers = Awaited<ReturnType<Send>>

/** The X-Spindle-Shed reasons of the answers that were neither served nor shed for backlog or overload. */
function otherThanLoad (answers: Answers): unknown[] {
  return answers.filter((r) => r.status !== 200).map((r) => r.headers['x-spindle-shed']).filter((why) => why !== 'backlog' && why !== 'overload')
}

/** Sends `count` renders of `path`, one every `every` ms, each over the next free connection. */
async function stream (send: Send, path: string, count: number, every: number): Promise<Answers> {
  return await Promise.all(Array.from({ length: count }, async (_, i) => {
    await sleep(i * every)
    return (await send(path, 1))[0]!
  }))
}

/**
 * Starts a 1-worker server with these shedding options, teaches it what `render` costs (24
 * renders one after another) and opens `count` connections to it; returns the server and
 * their sender.
 */
async function teach (shedding: LoadSheddingOptions, render: string, count: number): Promise<{ spindle: SpindleServer, send: Send }> {
  const spindle = server = await serve({ ...base, shedding })
  for (let i = 0; i < 24; i++) expect((await get(spindle.url + render)).status).toBe(200)
  return { spindle, send: await connections(spindle.url, count) }
}

/** How many of these answers were served; the rest must have been shed for backlog or overload. */
function servedOf (answers: Answers): number {
  expect(otherThanLoad(answers)).toEqual([])
  return answers.filter((r) => r.status === 200).length
}

/**
 * Like teach(), and returns a sender of bursts of `render` that answers how many of a burst
 * were served (the rest must have been shed for backlog, or cut from the queue at the overload).
 */
async function taught (shedding: LoadSheddingOptions, render: string): Promise<(n: number) => Promise<number>> {
  const { send } = await teach(shedding, render, 32)
  return async (n) => servedOf(await send(render, n))
}

/**
 * Blocks this very loop (the app runs in the test's process) for 1.5 s, then asks for a
 * render every 20 ms, for a second at most, until one is shed; returns that answer. The
 * sample that sees the block is taken as it ends, or, when the sampler's timer comes due
 * before the delay monitor's, one interval later, its mean diluted by that interval's
 * ordinary delays: the block is long enough to pass 50 ms either way.
 */
async function blockUntilShed (url: string): Promise<Awaited<ReturnType<typeof get>>> {
  const until = performance.now() + 1500
  while (performance.now() < until) { /* block */ }
  return await waitFor('a render to be shed', async () => {
    const res = await get(url + '/render')
    return res.status === 503 ? res : undefined
  }, 1000, 20)
}

describe('load shedding in runtime workers', () => {
  it('sheds renders with 503 + Retry-After under pressure, serves cache hits, static files and probes, and recovers', async () => {
    server = await serve({ ...base, shedding })
    const url = server.url
    expect((await get(url + '/render')).status).toBe(200)

    const load = pressure(url)
    try {
      const shed = await firstShed(url, 20)
      expect(shed.headers['retry-after']).toBe('1')
      expect(shed.headers['x-spindle-shed']).toBe('eventLoopDelay')
      expect(shed.body).toBe('Service Unavailable\n')

      const cached = await get(url + '/cached')
      expect(cached.status).toBe(200)
      expect(cached.headers['x-cache']).toBe('HIT')
      expect((await get(url + '/assets/app.js')).status).toBe(200)
      expect((await get(server.controlUrl! + '/healthz')).status).toBe(200)

      // Sustained shedding takes the pod out of the Service: /readyz answers 503.
      await waitFor('readiness to turn false', async () => {
        await get(url + '/render')
        return (await get(server!.controlUrl! + '/readyz')).status === 503
      }, 10_000, 50)
      expect(server.status()[0]!.state).toBe('overloaded')
      const status = (await get(server.controlUrl! + '/status')).json()
      expect(status.workers[0].shed.eventLoopDelay).toBeGreaterThan(0)
      const metrics = (await get(server.controlUrl! + '/metrics')).body
      expect(metrics).toMatch(/spindle_worker_shed_requests_total\{worker="1",reason="eventLoopDelay"\} [1-9]/)
    } finally {
      await load.stop()
    }

    await servedAgain(url)
    await waitFor('readiness to recover', async () => (await get(server!.controlUrl! + '/readyz')).status === 200, 10_000, 50)
    expect(server.status()[0]!.state).toBe('ready')
  })

  it('works beside an app that registers @fastify/under-pressure itself', async () => {
    server = await serve({ ...base, app: fixture('own-pressure-app.js'), shedding })
    const url = server.url
    expect((await get(url + '/up')).json()).toEqual({ status: 'ok' })
    expect((await get(url + '/render')).status).toBe(200)
    const load = pressure(url)
    try {
      const shed = await firstShed(url, 20)
      expect(shed.headers['x-spindle-shed']).toBe('eventLoopDelay')
    } finally {
      await load.stop()
    }
    await servedAgain(url)
  })

  it('sheds a render that waited longer than maxQueueTime before its handler', async () => {
    server = await serve({ ...base, shedding: { maxEventLoopDelay: 0, maxQueueTime: 100 } })
    const url = server.url
    const late = await get(url + '/render?hold=200')
    expect(late.status).toBe(503)
    expect(late.headers['x-spindle-shed']).toBe('queueTime')
    expect((await get(url + '/render?hold=10')).status).toBe(200)
    expect(server.status()[0]!.shed.queueTime).toBe(1)
  })

  it('sheds renders while the supervisor sees the heap past maxHeapRatio, serves the rest, and stops once it falls', async () => {
    // Flagged past half of a 96 MB heap; replaced only past 0.9 of it.
    server = await serve({ ...base, maxHeapMb: 96, shedding: { maxHeapRatio: 0.5 } })
    const url = server.url
    expect((await get(url + '/render')).status).toBe(200)
    expect((await get(url + '/retain?mb=45')).json().retainedMb).toBe(45)
    const shed = await firstShed(url, 50)
    expect(shed.headers['x-spindle-shed']).toBe('supervisor')
    expect(shed.headers['retry-after']).toBe('1')
    expect((await get(url + '/cached')).headers['x-cache']).toBe('HIT')
    expect((await get(url + '/assets/app.js')).status).toBe(200)
    expect((await get(server.controlUrl! + '/healthz')).status).toBe(200)
    expect(server.status()[0]!.shed.supervisor).toBeGreaterThan(0)

    await get(url + '/release')
    await servedAgain(url)
    // The same worker: flagged for shedding, never replaced.
    expect(server.status()[0]!.generation).toBe(1)
  })

  it('sheds the renders a burst brings past maxBacklog, serves the rest in turn, and never sheds a lone slow render', async () => {
    server = await serve({ ...base, shedding: { maxBacklog: 100 } })
    const url = server.url
    // An idle worker admits a render however long it takes.
    expect((await get(url + '/render?ms=400')).status).toBe(200)
    // Sequential renders of 30 ms teach the worker what one render costs.
    const render = '/render?ms=30&chunks=3'
    for (let i = 0; i < 24; i++) expect((await get(url + render)).status).toBe(200)

    // From calm, 16 at once: 30 ms each is 480 ms of work, far past a 100 ms backlog.
    const send = await connections(url)
    await sleep(1100)
    const [renders, others] = await Promise.all([
      send(render, 16),
      Promise.all([get(url + '/cached'), get(url + '/assets/app.js'), get(server.controlUrl! + '/healthz')]),
    ])
    const served = renders.filter((r) => r.status === 200)
    const shed = renders.filter((r) => r.status === 503)
    expect(served.length + shed.length).toBe(16)
    expect(served.length).toBeGreaterThanOrEqual(2)
    expect(shed.length).toBeGreaterThanOrEqual(6)
    for (const r of shed) {
      expect(r.headers['x-spindle-shed']).toBe('backlog')
      expect(r.headers['retry-after']).toBe('1')
    }
    for (const r of others) expect(r.status).toBe(200)
    expect(server.status()[0]!.shed.backlog).toBe(shed.length)
    // Once the burst is over, renders are admitted again.
    expect((await get(url + render)).status).toBe(200)
  })

  it('runs two CPU-bound renders at a time and lets cheap ones overlap more', async () => {
    server = await serve({ ...base, shedding: { maxBacklog: 10_000 } })
    const url = server.url
    const send = await connections(url)
    /** Teaches the worker what a render of `path` costs, then sends `n` at once: their peak overlap. */
    const burstPeak = async (path: string, n: number): Promise<number> => {
      for (let i = 0; i < 24; i++) await get(url + path)
      await get(url + '/peak')
      const burst = await send(path, n)
      expect(burst.map((r) => r.status)).toEqual(Array(n).fill(200))
      return (await get(url + '/peak')).json().peak as number
    }
    // 10 ms renders in two slices: two at a time.
    expect(await burstPeak('/render?ms=10&chunks=2', 8)).toBe(2)
    // 1 ms renders: several fit in the loop-time budget of the running renders.
    expect(await burstPeak('/render?ms=1&chunks=2', 16)).toBeGreaterThan(2)
  })

  it('holds the queue to overloadBacklog while renders keep arriving faster than they are served, and to maxBacklog again after', async () => {
    const served = await taught({ maxBacklog: 360, overloadBacklog: 90 }, '/render?ms=60&chunks=3')
    // From calm (no render for a second), a burst gets the full 360 ms: two running and a few
    // queued.
    await sleep(1100)
    const first = await served(16)
    expect(first).toBeGreaterThanOrEqual(5)
    // Right after shedding, with 32 renders of 60 ms asked for within about half a second
    // (several times the loop time), the next burst finds the shorter bound and one render at
    // a time: one running and the one that may always wait.
    const second = await served(16)
    expect(second).toBeGreaterThanOrEqual(2)
    expect(second).toBeLessThanOrEqual(3)
    expect(second).toBeLessThan(first)
    // A second without renders: the full bound again.
    await sleep(1100)
    expect(await served(16)).toBeGreaterThanOrEqual(5)
  })

  it('sheds the renders it queued beyond overloadBacklog before the overload showed, while their wait is short', async () => {
    const render = '/render?ms=10&chunks=5'
    const { spindle, send } = await teach({ maxBacklog: 400, overloadBacklog: 30 }, render, 64)
    await sleep(1100)
    // From calm, a render of 10 ms every 2 ms: five times what the worker renders. The queue
    // fills to the full 100 ms within a few renders, and as each render finishes, a newly
    // arrived one takes its place; once 50 ms of arrivals show the overload, the bound drops
    // to 30 ms, and the renders that joined the queue in the last 20 ms are answered at once.
    const answers = await stream(send, render, 60, 2)
    const reasons = answers.map((r) => r.status === 200 ? 'served' : String(r.headers['x-spindle-shed']))
    expect(reasons.filter((r) => !['served', 'backlog', 'overload'].includes(r))).toEqual([])
    expect(reasons.slice(0, 3)).toEqual(['served', 'served', 'served'])
    expect(reasons).toContain('overload')
    const shed = spindle.status()[0]!.shed
    expect(shed.overload).toBe(reasons.filter((r) => r === 'overload').length)
    expect(shed.backlog).toBe(reasons.filter((r) => r === 'backlog').length)
  })

  it('runs one render at a time while renders arrive far faster than it serves them, and two again after', async () => {
    // Renders of 10 ms: cheap enough that two overlap at any ordinary load (their loop time
    // is under the 15 ms within which a second one starts anyway).
    const render = '/render?ms=10&chunks=5'
    const { spindle, send } = await teach({ maxBacklog: 100, overloadBacklog: 30 }, render, 64)
    const url = spindle.url
    const peak = async (): Promise<number> => (await get(url + '/peak')).json().peak as number
    await sleep(1100)
    // A render of 10 ms every 2 ms for 300 ms and on: five times what the worker renders. Its
    // slices yield with setImmediate, so the loop never idles while one runs.
    const sent = stream(send, render, 300, 2)
    // Within 50 ms of arrivals the worker sees the overload; the two renders it started before
    // end within a few more renders' time. From then on, one runs at a time.
    await sleep(250)
    await peak()
    await sleep(250)
    const during = await peak()
    const answers = await sent
    expect(otherThanLoad(answers)).toEqual([])
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThan(10)
    expect(during).toBe(1)
    // After a second without renders, a burst runs two at a time again (and the third, the
    // one render that may always wait, waits whatever the bound).
    await sleep(1100)
    await peak()
    expect((await send(render, 3)).map((r) => r.status)).toEqual(Array(3).fill(200))
    expect(await peak()).toBe(2)
  })

  it('far past capacity, still overlaps renders of a few ms', async () => {
    // Renders of 1 ms: one at a time would leave each waiting for the loop's turns between
    // requests; two or more running need less than 5 ms of it between them (even when the
    // thread waits for a core now and then, which makes the measured cost higher).
    const render = '/render?ms=1&chunks=2'
    const { spindle, send } = await teach({ maxBacklog: 100, overloadBacklog: 30 }, render, 64)
    const url = spindle.url
    const peak = async (): Promise<number> => (await get(url + '/peak')).json().peak as number
    await sleep(1100)
    // Bursts of 32 renders every 8 ms for 400 ms: 4,000 renders a second, four times what
    // the worker renders.
    const sent = Promise.all(Array.from({ length: 50 }, async (_, i) => { await sleep(i * 8); return await send(render, 32) }))
    await sleep(150)
    await peak()
    await sleep(200)
    const during = await peak()
    const answers = (await sent).flat()
    expect(otherThanLoad(answers)).toEqual([])
    expect(answers.filter((r) => r.status === 503).length).toBeGreaterThan(100)
    expect(during).toBeGreaterThanOrEqual(2)
  })

  it('far past capacity, lets a new render take the place of the oldest one waiting, which gets its 503 at once', async () => {
    const render = '/render?ms=10&chunks=5'
    const { spindle, send } = await teach({ maxBacklog: 100, overloadBacklog: 30 }, render, 64)
    await sleep(1100)
    // A render of 10 ms every 2 ms for 600 ms: five times what the worker renders. Once the
    // overload shows (within 50 ms of arrivals), the queue is full at nearly every arrival;
    // the newcomer is queued and the render that has waited longest (a few ms) is shed with
    // 'overload'. Without that, the newcomer would be shed with 'backlog' and the served ones
    // would wait behind the whole queue.
    const answers = await stream(send, render, 300, 2)
    const reasons = answers.map((r) => r.status === 200 ? 'served' : String(r.headers['x-spindle-shed']))
    expect(reasons.filter((r) => !['served', 'backlog', 'overload'].includes(r))).toEqual([])
    const steady = reasons.slice(100)
    const count = (why: string): number => steady.filter((r) => r === why).length
    expect(count('served')).toBeGreaterThan(5)
    expect(count('overload')).toBeGreaterThan(2 * count('backlog'))
    const shed = spindle.status()[0]!.shed
    expect(shed.overload).toBe(reasons.filter((r) => r === 'overload').length)
    expect(shed.backlog).toBe(reasons.filter((r) => r === 'backlog').length)
  })

  it('keeps the full bound for a burst soon after shedding while arrivals stay below what the worker renders', async () => {
    const served = await taught({ maxBacklog: 80, overloadBacklog: 30 }, '/render?ms=10&chunks=2')
    await sleep(300)
    // 24 renders of 10 ms at once are 240 ms of work, well past twice the 80 ms bound (the
    // most a worker that keeps up may queue): some are shed.
    const shedAt = performance.now()
    expect(await served(24)).toBeLessThan(24)
    // 350 ms later, still inside the 500 ms after a shed, 6 more: 30 renders of 10 ms in
    // 350 ms ask for less than the loop has, so the burst is queued up to the full 80 ms
    // (two running, four waiting), where the overload bound would let three in.
    await sleep(350 - (performance.now() - shedAt))
    expect(performance.now() - shedAt).toBeLessThan(470)
    expect(await served(6)).toBe(6)
  })

  it('queues past maxBacklog, up to twice it, while the renders arriving ask for less than the loop has', async () => {
    const render = '/render?ms=10&chunks=2'
    const { spindle, send } = await teach({ maxBacklog: 80, overloadBacklog: 0 }, render, 48)
    // From calm, 10 renders of 10 ms at once: too soon to judge the arrivals, so the queue
    // stops at 80 ms and the last of them are shed.
    await sleep(1100)
    expect(servedOf(await send(render, 10))).toBeLessThan(10)
    // The same 10 while a render arrives every 25 ms (40 % of the loop): the arrivals of the
    // last half second ask for less than the loop has, so all of them queue, 100-130 ms.
    await sleep(1100)
    let steady = stream(send, render, 24, 25)
    await sleep(500)
    expect(servedOf(await send(render, 10))).toBe(10)
    expect(servedOf(await steady)).toBe(24)
    // 30 at once is more than twice the bound: the worker queues up to 160 ms and sheds the rest.
    await sleep(1100)
    steady = stream(send, render, 24, 25)
    await sleep(500)
    expect(servedOf(await send(render, 30))).toBeLessThan(30)
    servedOf(await steady)
    expect(spindle.status()[0]!.shed.backlog).toBeGreaterThanOrEqual(2)
  })

  it('queues a clump of renders up to three times maxBacklog while the worker keeps up over the last two seconds, and sheds the same clump from calm', async () => {
    const render = '/render?ms=10&chunks=2'
    const { spindle, send } = await teach({ maxBacklog: 200 }, render, 64)
    // 94 renders of 10 ms, one every 7.1 ms: 1.4 times the loop for 670 ms. The queue grows
    // by 0.4 ms every ms, to about 270 ms: past maxBacklog (200 ms), well within three times it.
    const clump = async (): Promise<number> => servedOf(await stream(send, render, 94, 7.1))
    // From calm, the arrivals cannot be weighed over time, and 1.4 times the loop is more than
    // a worker catches up with: the renders past 200 ms are shed.
    await sleep(1100)
    expect(await clump()).toBeLessThan(94)
    const shedFromCalm = spindle.status()[0]!.shed.backlog
    expect(shedFromCalm).toBeGreaterThan(0)
    // After 2.2 s of a render every 40 ms (a quarter of the loop), the last two seconds ask for
    // less than the loop has, clump included: the worker keeps up, and queues all of it.
    await sleep(1100)
    expect(servedOf(await stream(send, render, 55, 40))).toBe(55)
    expect(await clump()).toBe(94)
    expect(spindle.status()[0]!.shed.backlog).toBe(shedFromCalm)
  })

  it('warns once when a worker sheds far more than it serves: clients asking again at once', async () => {
    const warnings: Array<{ fields: Record<string, unknown>, msg: string }> = []
    const logger = { info () {}, error () {}, warn (fields: Record<string, unknown>, msg: string) { warnings.push({ fields, msg }) } }
    // Every render is shed at once (any heap is more than one byte), so eight clients that
    // ask again on each 503 make a flood of them, with retryHold off (its default holds them).
    server = await serve({ ...base, logger, shedding: { maxHeapUsedBytes: 1, sampleInterval: 50, retryHold: 0 } })
    const send = await connections(server.url, 8)
    const flood = (): { fields: Record<string, unknown>, msg: string } | undefined => warnings.find((w) => w.msg.startsWith('worker sheds far more requests than it serves'))
    const until = performance.now() + 10_000
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (!flood() && performance.now() < until) await send('/render', 1)
    }))
    const warning = flood()
    expect(warning?.msg).toContain('docs/overload.md#closed-loop-load-testers')
    expect(warning?.fields.worker).toBe(1)
    expect(warning?.fields.shedPerSecond).toBeGreaterThanOrEqual(100)
    expect(warning?.fields.shedPerSecond).toBeGreaterThanOrEqual(5 * Number(warning?.fields.servedPerSecond))
    // Once a minute at most.
    for (let i = 0; i < 1500; i++) expect((await send('/render', 1))[0]!.status).toBe(503)
    expect(warnings.filter((w) => w.msg === warning!.msg)).toHaveLength(1)
  })

  it('admits every render of a burst with maxBacklog: 0', async () => {
    server = await serve({ ...base, shedding: { maxBacklog: 0 } })
    const render = server.url + '/render?ms=30&chunks=3'
    for (let i = 0; i < 24; i++) await get(render)
    const burst = await Promise.all(Array.from({ length: 16 }, () => get(render)))
    expect(burst.map((r) => r.status)).toEqual(Array(16).fill(200))
    expect(server.status()[0]!.shed.backlog).toBe(0)
  })

  it('is off with shedding: false', async () => {
    server = await serve({ ...base, shedding: false })
    const load = pressure(server.url)
    try {
      for (let i = 0; i < 5; i++) expect((await get(server.url + '/render')).status).toBe(200)
    } finally {
      await load.stop()
    }
    expect(server.status()[0]!.shed.eventLoopDelay).toBe(0)
  })
})

describe('loadShedding plugin in one Fastify process', () => {
  it('sheds renders under event-loop pressure and leaves opted-out routes alone', async () => {
    app = Fastify()
    await app.register(loadShedding, { maxEventLoopDelay: 50, sampleInterval: 200 })
    app.get('/render', async () => 'rendered\n')
    app.get('/health', { config: { shed: false } }, async () => 'ok\n')
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const render = await blockUntilShed(url)
    expect(render.headers['x-spindle-shed']).toBe('eventLoopDelay')
    expect((await get(url + '/health')).status).toBe(200)
    expect(app.shedCounts().eventLoopDelay).toBe(1)
  })

  it('sheds for event-loop utilization and for heap used, with the given Retry-After, and serves the given static prefixes', async () => {
    const listen = async (opts: LoadSheddingOptions): Promise<{ url: string, fastify: FastifyInstance }> => {
      const fastify = app = Fastify()
      await fastify.register(loadShedding, { sampleInterval: 200, retryAfter: 7, staticPrefixes: ['/public/'], ...opts })
      fastify.get('/render', async () => 'rendered\n')
      fastify.get('/public/logo.svg', async () => '<svg/>\n')
      await fastify.listen({ port: 0, host: '127.0.0.1' })
      // Past the first two samples, which cover start-up and are not judged.
      await sleep(450)
      return { url: `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`, fastify }
    }

    // A loop busy for 600 ms: the sample taken right after covers it and at most 200 ms of
    // idle before it, a utilization of at least 0.75. A request that a busy machine delays
    // past the next sample is judged by that one instead: try again.
    let { url, fastify } = await listen({ maxEventLoopUtilization: 0.5 })
    let render: Awaited<ReturnType<typeof get>> | undefined
    let asset: Awaited<ReturnType<typeof get>>
    for (let i = 0; i < 3 && render?.status !== 503; i++) {
      const until = performance.now() + 600
      while (performance.now() < until) { /* block */ }
      await sleep(5)
      ;[render, asset] = await Promise.all([get(url + '/render'), get(url + '/public/logo.svg')])
      expect(asset.status).toBe(200)
    }
    expect(render!.status).toBe(503)
    expect(render!.headers['x-spindle-shed']).toBe('eventLoopUtilization')
    expect(render!.headers['retry-after']).toBe('7')
    expect(fastify.shedCounts().eventLoopUtilization).toBe(1)
    await fastify.close()

    // Any heap is more than one byte.
    ;({ url, fastify } = await listen({ maxHeapUsedBytes: 1 }))
    ;[render, asset] = await Promise.all([get(url + '/render'), get(url + '/public/logo.svg')])
    expect(render.status).toBe(503)
    expect(render.headers['x-spindle-shed']).toBe('heapUsedBytes')
    expect(asset.status).toBe(200)
    expect(fastify.shedCounts().heapUsedBytes).toBe(1)
  })

  it('registers beside @fastify/under-pressure in the same context, each with its own thresholds', async () => {
    app = Fastify()
    await app.register(loadShedding, { maxEventLoopDelay: 50, sampleInterval: 200 })
    await app.register(underPressure, { exposeStatusRoute: '/up', sampleInterval: 100, maxHeapUsedBytes: 1, pressureHandler: () => undefined })
    app.get('/render', async () => 'rendered\n')
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    await sleep(450)
    // The app's own instance answers its status route and reports its samples.
    expect((await get(url + '/up')).json()).toEqual({ status: 'ok' })
    expect(app.memoryUsage().heapUsed).toBeGreaterThan(0)
    // The app's heap threshold is its own business: renders are served.
    expect((await get(url + '/render')).status).toBe(200)
    const render = await blockUntilShed(url)
    expect(render.headers['x-spindle-shed']).toBe('eventLoopDelay')
  })
})
