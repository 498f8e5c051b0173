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
    // Served without pressure (on a busy machine the first samples after start can pass 40 ms).
    await servedAgain(url)

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
    await servedAgain(url)
    expect((await waitFor('the app\'s own status route', async () => {
      const res = await get(url + '/up')
      return res.status === 200 ? res : undefined
    }, 10_000, 50)).json()).toEqual({ status: 'ok' })
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

  it('queues a burst that drains within maxBacklog, sheds with backlog what would wait past it, and never sheds a lone slow render', async () => {
    server = await serve({ ...base, shedding: { maxBacklog: 400 } })
    const url = server.url
    // An idle worker admits a render however long it takes.
    expect((await get(url + '/render?ms=1000')).status).toBe(200)
    // Sequential renders of 30 ms teach the worker how fast renders end.
    const render = '/render?ms=30&chunks=3'
    for (let i = 0; i < 24; i++) expect((await get(url + render)).status).toBe(200)
    const send = await connections(url, 32)
    // 4 at once: 120 ms of work, well within the 400 ms budget: all queued, none shed.
    await sleep(300)
    expect(servedOf(await send(render, 4))).toBe(4)
    // 32 at once: 960 ms of work. Those predicted to wait past 400 ms are shed at once, with
    // 'backlog' (a clump is not an overload: nothing arrives while it drains); cache hits,
    // static files and probes are served meanwhile.
    await sleep(300)
    const [renders, others] = await Promise.all([
      send(render, 32),
      Promise.all([get(url + '/cached'), get(url + '/assets/app.js'), get(server.controlUrl! + '/healthz')]),
    ])
    const served = renders.filter((r) => r.status === 200)
    const shed = renders.filter((r) => r.status === 503)
    expect(served.length + shed.length).toBe(32)
    expect(served.length).toBeGreaterThanOrEqual(4)
    expect(shed.length).toBeGreaterThanOrEqual(8)
    for (const r of shed) {
      expect(r.headers['x-spindle-shed']).toBe('backlog')
      expect(r.headers['retry-after']).toBe('1')
    }
    for (const r of others) expect(r.status).toBe(200)
    expect(server.status()[0]!.shed.backlog).toBe(shed.length)
    // Once the burst is over, renders are admitted again.
    expect((await get(url + render)).status).toBe(200)
    expect(server.status()[0]!.admission).toBe('normal')
  })

  it('while a worker is replaced, the others queue a burst of up to twice maxBacklog instead of shedding it', async () => {
    // The replacement's warm-up waits on timers for about 3 s: the old worker serves meanwhile.
    server = await serve({ ...base, shedding: { maxBacklog: 280 }, warmup: { paths: ['/render?wait=200&ms=0'], requests: 15 } })
    const url = server.url
    const render = '/render?ms=20&chunks=2'
    for (let i = 0; i < 24; i++) expect((await get(url + render)).status).toBe(200)
    const send = await connections(url, 20)
    const restarting = async (): Promise<boolean> => (await get(server!.controlUrl! + '/status')).json().restarting as boolean
    expect(await restarting()).toBe(false)
    // 20 at once: 400 ms of work against a budget of 280: the last few are shed.
    await sleep(300)
    const before = await send(render, 20)
    expect(before.length - servedOf(before)).toBeGreaterThanOrEqual(2)
    // The same burst, over the same kept-alive connections, while a replacement warms up.
    await sleep(300)
    const restart = server.restart()
    await waitFor('the replacement to start', async () => server!.status()[0]!.state === 'replacing' && await restarting())
    await sleep(300)
    const during = await send(render, 20)
    expect(servedOf(during)).toBe(20)
    await restart
    // Held for a budget after the old worker is gone, then off.
    await waitFor('the restart to be over', async () => !(await restarting()), 5000, 50)
  })

  it('runs two CPU-bound renders at a time, and more while the running ones wait for I/O', async () => {
    server = await serve({ ...base, shedding: { maxBacklog: 10_000 } })
    const url = server.url
    const send = await connections(url)
    /** Sends `n` renders of `path` at once: their peak overlap. */
    const burstPeak = async (path: string, n: number): Promise<number> => {
      for (let i = 0; i < 8; i++) await get(url + path)
      await get(url + '/peak')
      const burst = await send(path, n)
      expect(burst.map((r) => r.status)).toEqual(Array(n).fill(200))
      return (await get(url + '/peak')).json().peak as number
    }
    // 10 ms renders in two slices: two at a time.
    expect(await burstPeak('/render?ms=10&chunks=2', 8)).toBe(2)
    // Renders that wait 30 ms for "the database" before 1 ms of work: the loop idles, so
    // more start.
    expect(await burstPeak('/render?ms=1&wait=30', 8)).toBeGreaterThan(2)
  })

  it('under sustained overload: sheds with overload beyond overloadBacklog, reports shedding, and is normal again after', async () => {
    const render = '/render?ms=10&chunks=5'
    // A budget of 300 ms: 30 renders, fewer than the 64 connections the load comes over.
    const { spindle, send } = await teach({ maxBacklog: 300, overloadBacklog: 10 }, render, 64)
    const url = spindle.url
    const peak = async (): Promise<number> => (await get(url + '/peak')).json().peak as number
    await sleep(300)
    // 5 renders of 10 ms every 10 ms for 1.5 s: five times what the worker renders (not ten:
    // that many 503s a render look like clients retrying at once), spread over time (not one
    // clump), so more arrive than end in every stretch the worker looks at.
    const sent = Promise.all(Array.from({ length: 150 }, async (_, i) => { await sleep(i * 10); return await send(render, 5) }))
    await sleep(900)
    const state = spindle.status()[0]!.admission
    const answers = (await sent).flat()
    const reasons = answers.map((r) => r.status === 200 ? 'served' : String(r.headers['x-spindle-shed']))
    console.info('sustained overload:', JSON.stringify(Object.fromEntries(['served', 'backlog', 'overload', 'queueTime'].map((k) => [k, reasons.filter((r) => r === k).length]))), state)
    // queueTime too: on a machine this busy, requests can wait past maxQueueTime in the socket.
    expect(reasons.filter((r) => !['served', 'backlog', 'overload', 'queueTime'].includes(r))).toEqual([])
    expect(reasons.filter((r) => r === 'served').length).toBeGreaterThan(20)
    expect(reasons.filter((r) => r === 'overload').length).toBeGreaterThan(20)
    expect(['shedding', 'recovering']).toContain(state)
    const shed = spindle.status()[0]!.shed
    expect(shed.overload).toBe(reasons.filter((r) => r === 'overload').length)
    expect(shed.backlog).toBe(reasons.filter((r) => r === 'backlog').length)
    // The load over, a burst is queued whole again, two at a time.
    await sleep(500)
    await peak()
    expect(servedOf(await send(render, 6))).toBe(6)
    expect(await peak()).toBe(2)
    expect(spindle.status()[0]!.admission).toBe('normal')
  })

  it('accepts new connections while renders that never wait for I/O keep the worker busy', async () => {
    // libuv accepts one connection per turn of the event loop. Renders that end inside the
    // callback that started them used to run back to back in one turn (every request its poll
    // read), so a turn lasted 40 renders and new connections came in one per 160 ms.
    const spindle = server = await serve(base)
    const render = '/render?ms=4'
    const send = await connections(spindle.url, 40)
    let running = true
    const loops = Array.from({ length: 40 }, async () => { while (running) await send(render, 1) })
    await sleep(300)
    const started = performance.now()
    const firsts = await Promise.all(Array.from({ length: 10 }, async () => {
      const agent = new Agent({ keepAlive: false })
      agents.push(agent)
      const res = await get(spindle.url + render, { agent })
      return { status: res.status, ms: performance.now() - started }
    }))
    running = false
    await Promise.all(loops)
    expect(firsts.map((f) => f.status)).toEqual(Array(10).fill(200))
    // 40 renders of 4 ms queued ahead: about 160 ms of waiting, and a turn per connection.
    expect(Math.max(...firsts.map((f) => f.ms))).toBeLessThan(800)
  })

  it('a retry storm: clients that ask again the moment their 503 arrives are queued within maxBacklog, their immediate retries held', async () => {
    const render = '/render?ms=5'
    const { spindle, send } = await teach({ maxBacklog: 100, overloadBacklog: 5, retryHold: 200 }, render, 64)
    // 48 clients that ask again at once, for 1.5 s: far more than 100 ms of work at a time.
    const until = performance.now() + 1500
    const counts = { served: 0, shed: 0 }
    await Promise.all(Array.from({ length: 48 }, async () => {
      while (performance.now() < until) {
        const [r] = await send(render, 1)
        if (r!.status === 200) counts.served++; else counts.shed++
      }
    }))
    // 5 ms renders: about 300 in 1.5 s at full speed. Without the storm handling, each client
    // would spin on 503s (thousands) and the renders would share the loop with them. With
    // it, a client's 503 right after a served page comes at once, and every retry after a
    // 503 is held 200 ms: at most two 503s per 200 ms and client.
    expect(counts.served).toBeGreaterThan(100)
    expect(counts.shed).toBeGreaterThan(0)
    expect(counts.shed).toBeLessThan(2 * 48 * 1500 / 200)
    expect(spindle.status()[0]!.shed.backlog + spindle.status()[0]!.shed.overload).toBe(counts.shed)
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
  it('serves injected requests that had to wait their turn (a worker warms up through inject)', async () => {
    app = Fastify()
    await app.register(loadShedding, {})
    app.get('/render', async () => {
      const until = performance.now() + 6
      while (performance.now() < until) { /* a render that never waits for I/O */ }
      return 'rendered\n'
    })
    await app.ready()
    // Six at once: two start in this turn of the loop, the rest wait in the queue for later
    // turns. light-my-request's socket has no `destroyed`, and such a waiting request used
    // to be dropped from the queue, its inject never answered.
    const answers = await Promise.race([
      Promise.all(Array.from({ length: 6 }, () => app!.inject({ method: 'GET', url: '/render' }))),
      new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('an injected request was never answered')), 5000)),
    ])
    expect(answers.map((a) => a.statusCode)).toEqual(Array(6).fill(200))
  })

  /**
   * Thirty pages of 40 ms of CPU each, in four parts with the loop turning between them (a
   * streamed render), asked for at once on connections already open, and 30 ms later one
   * request of `/api` (its config `apiConfig`), whose earlier renders were measured.
   */
  async function apiBehindPages (apiConfig: Record<string, unknown>): Promise<{ apiMs: number, lastPage: number, served: number }> {
    app = Fastify()
    // A budget that queues every page rather than shedding some.
    await app.register(loadShedding, { maxBacklog: 10_000 })
    app.get('/page', async () => {
      for (let part = 0; part < 4; part++) {
        const end = performance.now() + 10
        while (performance.now() < end);
        await new Promise((resolve) => setImmediate(resolve))
      }
      return 'page\n'
    })
    app.get('/api', { config: apiConfig }, async () => ({ ok: true }))
    app.get('/ping', { config: { shed: false } }, async () => 'pong\n')
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    // The API's renders are measured until their average falls under half a millisecond (the
    // first ones run cold), on a connection kept open: a new one would wait its turn to be
    // accepted behind the pages' (one a turn of the event loop).
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const pageAgent = new Agent({ keepAlive: true, maxSockets: 30 })
    agents.push(agent, pageAgent)
    for (let i = 0; i < 60; i++) expect((await get(url + '/api', { agent })).status).toBe(200)
    await Promise.all(Array.from({ length: 30 }, () => get(url + '/ping', { agent: pageAgent })))
    const sent = performance.now()
    const pages = Array.from({ length: 30 }, () => get(url + '/page', { agent: pageAgent, timeout: 20_000 }).then((answer) => ({ answer, ms: performance.now() - sent })))
    await sleep(30)
    const api = await get(url + '/api', { agent, timeout: 20_000 })
    const apiMs = performance.now() - sent
    expect(api.status).toBe(200)
    const served = (await Promise.all(pages)).filter((p) => p.answer.status === 200)
    return { apiMs, lastPage: Math.max(...served.map((p) => p.ms)), served: served.length }
  }

  it('starts the requests of a route measured cheap at once, not behind the pages waiting their turn', async () => {
    const { apiMs, lastPage, served } = await apiBehindPages({})
    expect(served).toBeGreaterThanOrEqual(10)
    // The last page ends after some 40 ms of work for each page before it. Queued with them,
    // the API request would have waited for most of it (it did, before routes were measured).
    expect(apiMs).toBeLessThan(lastPage / 2)
  })

  it('gives a route that declares itself a render its turn however fast it answers', async () => {
    // A framework's catch-all serves cheap answers (a prerendered page) and renders alike.
    const { apiMs, lastPage, served } = await apiBehindPages({ render: true })
    expect(served).toBeGreaterThanOrEqual(10)
    expect(apiMs).toBeGreaterThan(lastPage / 2)
  })

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
