import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyReply } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { AdmissionController } from '../../src/admission/controller.ts'
import { RenderQueue } from '../../src/admission/render-queue.ts'

// A real HTTP server whose every request is a render admitted by a RenderQueue, answered
// after `?ms=` milliseconds (0: at once). The queue reads the busy time through `reads`.
let server: Server | undefined
afterEach(async () => {
  await new Promise<void>((resolve) => { if (server) server.close(() => resolve()); else resolve() })
  server = undefined
})

async function start (): Promise<{ url: string, reads: () => number, controller: AdmissionController }> {
  let reads = 0
  const controller = new AdmissionController({ budget: 1000, target: 10 })
  const queue = new RenderQueue(controller, 0, (reply) => { reply.raw.statusCode = 503; reply.raw.end() }, () => {}, () => {
    reads++
    return performance.now()
  })
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 0)
    // The queue reaches the raw request and response through these two fields only.
    const reply = { raw: res, request: { raw: req } } as unknown as FastifyReply
    const now = performance.now()
    const refused = queue.admit(reply, () => {
      if (ms === 0) res.end('ok')
      else setTimeout(() => res.end('ok'), ms)
    }, now, now)
    if (refused) { res.statusCode = 503; res.end() }
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/`, reads: () => reads, controller }
}

describe('RenderQueue', () => {
  it('reads the thread\'s busy time at the end of renders of 1 ms or more, not of shorter ones', async () => {
    const { url, reads, controller } = await start()
    // The first renders run cold.
    for (let i = 0; i < 10; i++) expect((await fetch(url)).status).toBe(200)
    const before = reads()
    for (let i = 0; i < 50; i++) expect((await fetch(url)).status).toBe(200)
    // Renders answered at once take well under 1 ms; a busy machine stretches some (7 of 50
    // once, on a clean-clone run beside other work): most must end unread.
    expect(reads() - before).toBeLessThan(25)
    const short = reads()
    for (let i = 0; i < 5; i++) expect((await fetch(url + '?ms=5')).status).toBe(200)
    expect(reads() - short).toBe(5)
    // Every render ended and was counted, read or not.
    expect(controller.running).toBe(0)
  })

  it('brings its reported state back to normal once an overload stops, with no event to judge it on', async () => {
    let now = 0
    const controller = new AdmissionController({ budget: 200, target: 10 }, () => now)
    // Renders of 5 ms of busy time, one after another, then arrivals at ten times that pace
    // for 300 ms with a queue waiting: a step.
    for (let i = 0; i < 12; i++) { controller.started(now, 0); now += 5; controller.finished(now, 5, 0, now) }
    let queued = 0
    for (let i = 0; i < 600; i++, now += 0.5) {
      if (controller.arrive(now, queued, 2, 2) === 'admit') queued++
      if (i % 10 === 9 && queued > 0) { queued--; controller.started(now, 0); controller.finished(now, 5, queued, now) }
    }
    expect(controller.state).toBe('shedding')
    const reported: string[] = []
    const queue = new RenderQueue(controller, 0, () => {}, (state) => { reported.push(state) })
    // One refusal reports the state; then nothing arrives for two seconds.
    queue.rejected({ raw: { socket: null } } as unknown as FastifyReply, now)
    expect(reported).toEqual(['shedding'])
    now += 2000
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(reported.at(-1)).toBe('normal')
  })

  it('starts no render for a client that left before the render was admitted, and counts none as running', async () => {
    const controller = new AdmissionController({ budget: 1000, target: 10 })
    const queue = new RenderQueue(controller, 0, undefined)
    let started = 0
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const reply = { raw: res, request: { raw: req } } as unknown as FastifyReply
      // The app's hooks (or the HTTP cache's coalescing) hold the request 200 ms before its turn.
      setTimeout(() => {
        const now = performance.now()
        queue.admit(reply, () => { started++; res.end('ok') }, now, now)
      }, 200)
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const { connect } = await import('node:net')
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n')
    await new Promise((resolve) => setTimeout(resolve, 50))
    socket.destroy()
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect([started, controller.running]).toEqual([0, 0])
    // A client that stays is served as usual.
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('ok')
    expect([started, controller.running]).toEqual([1, 0])
  })

  it('runs renders that wait for I/O side by side as far as the loop idles, and renders that compute two at a time', async () => {
    const controller = new AdmissionController({ budget: 60_000, target: 10 })
    const queue = new RenderQueue(controller, 0, undefined)
    // The renders the queue counts as running (from start to the response's close), at most.
    let most = 0
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const reply = { raw: res, request: { raw: req } } as unknown as FastifyReply
      const waits = req.url === '/wait'
      const now = performance.now()
      queue.admit(reply, () => {
        most = Math.max(most, queue.running)
        if (waits) { setTimeout(() => res.end('ok'), 40); return }
        // Computes for 3 ms, then answers.
        const until = performance.now() + 3
        while (performance.now() < until);
        res.end('ok')
      }, now, now)
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const { Agent, request } = await import('undici')
    const agent = new Agent({ connections: 100 })
    const burst = async (path: string): Promise<void> => {
      const answers = await Promise.all(Array.from({ length: 100 }, async () => {
        const r = await request(`http://127.0.0.1:${port}${path}`, { dispatcher: agent })
        return r.body.text()
      }))
      expect(answers.every((a) => a === 'ok')).toBe(true)
    }
    try {
      // 100 renders that each wait 40 ms on a timer: the loop idles, so far more than two run
      // at once (with one more per idle poll interval and two again at every end, as before
      // the limit, about as many as the poll intervals a render lasts: 19 here; 38-47 with it).
      await burst('/wait')
      expect(most).toBeGreaterThanOrEqual(30)
      // Renders that only compute leave the loop no idle time: they take turns two at a time,
      // once the limit the waiting renders reached has been forgotten.
      await new Promise((resolve) => setTimeout(resolve, 1100))
      most = 0
      await burst('/compute')
      expect(most).toBeLessThanOrEqual(3)
    } finally {
      await agent.close()
    }
  })
})
