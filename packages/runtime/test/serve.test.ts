import { afterEach, describe, expect, it } from 'vitest'
import { Agent } from 'node:http'
import { connect, createServer, type AddressInfo } from 'node:net'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { serve, type SpindleServer } from '@spindle/runtime'
import { busiestScavenges, fixture, get, waitFor } from './helpers.ts'

const base = { app: fixture('app.js'), port: 0, controlPort: 0, handleSignals: false, host: '127.0.0.1' } as const

let server: SpindleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('serve()', () => {
  it('runs every worker on one port and the kernel spreads fresh connections across them', async () => {
    server = await serve({ ...base, workers: 2 })
    expect(server.port).toBeGreaterThan(0)
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`)
    const threads = new Set<number>()
    for (let i = 0; i < 200 && threads.size < 2; i++) {
      const res = await get(server.url + '/')
      expect(res.status).toBe(200)
      threads.add(res.json().thread)
    }
    expect(threads.size).toBe(2)
    const status = server.status()
    expect(status.map((w) => w.state)).toEqual(['ready', 'ready'])
    expect(server.ready()).toBe(true)
  })

  it('passes appOptions to the plugin and shared resources to every worker', async () => {
    const counter = new SharedArrayBuffer(4)
    server = await serve({ ...base, workers: 2, appOptions: { greeting: 'hi' }, shared: { counter } })
    const res = await get(server.url + '/')
    expect(res.json().greeting).toBe('hi')
    expect(res.json().worker.generation).toBe(1)
    for (let i = 0; i < 10; i++) expect((await get(server.url + '/shared')).status).toBe(200)
    // Both workers wrote into the one buffer the main thread created.
    expect(new Int32Array(counter)[0]).toBe(10)
  })

  it("counts the requests of an app that brings its own server with more than one 'request' listener", async () => {
    server = await serve({ ...base, app: fixture('server-factory.js'), workers: 1 })
    for (let i = 0; i < 3; i++) expect((await get(server.url + '/')).status).toBe(200)
    // The app's listener runs after Fastify's answer: the 4th request sees the first three.
    expect((await get(server.url + '/')).json()).toEqual({ seen: 3 })
    const [worker] = server.status()
    expect(worker!.requests).toBe(4)
    await waitFor('no request in flight', () => server!.status()[0]!.inflight === 0)
  })

  it('restarts a crashed worker and the port keeps serving', async () => {
    server = await serve({ ...base, workers: 2, restartDelay: 50 })
    const crashed = await get(server.url + '/crash')
    expect(crashed.status).toBe(200)
    const slot = crashed.json().worker.id as number
    // Every request during the restart is answered by the surviving worker or the new one.
    await waitFor('the crashed slot to come back', () => {
      const w = server!.status()[slot - 1]!
      return w.restarts === 1 && w.state === 'ready' && w.generation === 2
    })
    for (let i = 0; i < 20; i++) expect((await get(server.url + '/')).status).toBe(200)
    expect(server.ready()).toBe(true)
  })

  it('never replaces a worker for being busy', async () => {
    server = await serve({ ...base, workers: 1, heartbeatTimeout: 200, stallTimeout: 600 })
    const res = await get(server.url + '/busy?ms=2000')
    expect(res.status).toBe(200)
    const [w] = server.status()
    expect(w!.generation).toBe(1)
    expect(w!.restarts).toBe(0)
  })

  it('detects a stuck event loop, turns /readyz false, and replaces the worker while the other keeps serving', async () => {
    server = await serve({ ...base, workers: 2, heartbeatTimeout: 200, stallTimeout: 1500, minReadyWorkers: 2 })
    const readyz = server.controlUrl + '/readyz'
    expect((await get(readyz)).status).toBe(200)
    const blocked = await get(server.url + '/block')
    const slot = blocked.json().worker.id as number

    // The control server lives on the main thread: it answers at once.
    const notReady = await waitFor('readyz to report the stuck worker', async () => {
      const r = await get(readyz, { timeout: 500 })
      return r.status === 503 ? r : undefined
    }, 5000)
    expect(notReady.json().readyWorkers).toBe(1)
    const status = await get(server.controlUrl + '/status', { timeout: 500 })
    expect(status.json().workers[slot - 1].state).toBe('unresponsive')

    // The healthy worker keeps answering. Fresh connections that the kernel gives to the
    // stuck one wait in its queue, so count successes on short timeouts.
    let served = 0
    for (let i = 0; i < 10; i++) {
      const ok = await get(server.url + '/', { timeout: 300 }).then((r) => r.status === 200, () => false)
      if (ok) served++
    }
    expect(served).toBeGreaterThan(0)

    await waitFor('the stuck worker to be replaced', () => {
      const w = server!.status()[slot - 1]!
      return w.generation === 2 && w.state === 'ready'
    }, 10_000)
    expect((await get(readyz)).status).toBe(200)
    for (let i = 0; i < 20; i++) expect((await get(server.url + '/')).status).toBe(200)
  })

  it('answers on the control port while the app loads: /healthz 200, /readyz 503, workers starting', async () => {
    // A free port for the control server, known before serve() resolves.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const controlPort = (probe.address() as AddressInfo).port
    await new Promise((resolve) => probe.close(resolve))
    process.env.SLOW_START_MS = '2000'
    const starting = serve({ ...base, app: fixture('slow-start.js'), controlPort, workers: 1 })
    try {
      const control = `http://127.0.0.1:${controlPort}`
      const healthz = await waitFor('the control port to answer during start-up', async () => {
        const r = await get(control + '/healthz', { timeout: 500 }).catch(() => undefined)
        return r?.status === 200 ? r : undefined
      }, 1500)
      expect(healthz.json()).toEqual({ status: 'ok' })
      const readyz = await get(control + '/readyz')
      expect(readyz.status).toBe(503)
      expect(readyz.json().readyWorkers).toBe(0)
      const status = (await get(control + '/status')).json()
      expect(status.workers.map((w: { state: string }) => w.state)).toEqual(['starting'])
      expect(status.url).toBeNull()
      expect((await get(control + '/metrics')).body).toMatch(/^spindle_ready 0$/m)
      server = await starting
      expect((await get(control + '/readyz')).status).toBe(200)
      expect((await get(control + '/status')).json().url).toBe(server.url)
    } finally {
      delete process.env.SLOW_START_MS
      server ??= await starting.catch(() => undefined)
    }
  })

  it('answers a wrong method on a control route 405 with Allow, and HEAD /metrics without asking the workers', async () => {
    server = await serve({ ...base, workers: 1 })
    const post = await get(server.controlUrl + '/healthz', { method: 'POST' })
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe('GET, HEAD')
    expect((await get(server.controlUrl + '/nope', { method: 'POST' })).status).toBe(404)
    const head = await get(server.controlUrl + '/metrics', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(head.body).toBe('')
  })

  it('answers /healthz and /status within milliseconds while every worker is blocked', async () => {
    server = await serve({ ...base, workers: 1, heartbeatTimeout: 200, stallTimeout: 5000 })
    await get(server.url + '/block')
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const path of ['/healthz', '/status', '/readyz', '/metrics']) {
      const started = performance.now()
      const res = await get(server.controlUrl + path, { timeout: 1000 })
      expect(performance.now() - started).toBeLessThan(250)
      expect([200, 503]).toContain(res.status)
    }
    expect((await get(server.controlUrl + '/readyz')).status).toBe(503)
    const metrics = await get(server.controlUrl + '/metrics')
    expect(metrics.body).toMatch(/^spindle_workers_ready 0$/m)
  })

  it('starts workers without V8\'s memory reducer unless memoryReducer is true, each as configured', async () => {
    // V8 prints what each isolate's memory reducer does, tagged [pid:isolate:thread]; an
    // isolate without one prints nothing. The fixture starts a server with memoryReducer: true,
    // then one with the default, and idles past the reducer's first 8 s timer.
    const child = spawn(process.execPath, ['--trace-memory-reducer', fixture('memory-reducer.mjs'), '11000'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString() })
    const [code] = await once(child, 'exit') as [number | null]
    expect(code, out).toBe(0)
    const isolates = new Set([...out.matchAll(/^\[\d+:(0x[0-9a-f]+):(\d+)\][^\n]*Memory reducer/gm)].filter((m) => m[2] !== '0').map((m) => m[1]))
    // One worker has a reducer: the first server's; the second server's switch, set as its
    // worker started, did not reach the worker already running.
    expect(isolates.size, out).toBe(1)
  }, 30_000)

  it('scavenges on each worker\'s own thread with parallelScavenge: false, with V8\'s helpers by default', async () => {
    // --trace-gc-nvp prints a line per minor GC (gc=s) of every isolate, tagged
    // [pid:isolate:thread], with the ms V8's helper threads spent on it.
    const helperMs = async (setting: string): Promise<number[]> => {
      const child = spawn(process.execPath, ['--trace-gc-nvp', fixture('parallel-scavenge.mjs'), setting], { stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
      child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString() })
      const [code] = await once(child, 'exit') as [number | null]
      expect(code, out).toBe(0)
      return busiestScavenges(out)
    }
    const own = await helperMs('false')
    expect(own.length).toBeGreaterThan(10)
    expect(own.every((ms) => ms === 0)).toBe(true)
    const helped = await helperMs('default')
    expect(helped.length).toBeGreaterThan(10)
    expect(helped.some((ms) => ms > 0)).toBe(true)
  }, 60_000)

  it('replaces a worker that nears its heap limit, draining the old one', async () => {
    server = await serve({ ...base, workers: 1, maxHeapMb: 64, heapLimitRatio: 0.5 })
    const agent = new Agent({ keepAlive: true })
    for (let i = 0; i < 6; i++) await get(server.url + '/leak?mb=8', { agent })
    agent.destroy()
    await waitFor('the heap-limit replacement', () => server!.status()[0]!.generation === 2, 10_000)
    expect((await get(server.url + '/')).status).toBe(200)
  })

  it('drains on close: slow requests in flight finish, then the workers stop', async () => {
    server = await serve({ ...base, workers: 2, shutdownTimeout: 5000 })
    const url = server.url
    const slow = Array.from({ length: 6 }, () => get(url + '/slow?ms=800'))
    await waitFor('requests in flight', () => server!.status().reduce((n, w) => n + w.inflight, 0) === 6)
    const closing = server.close()
    expect(server.ready()).toBe(false)
    const answers = await Promise.all(slow)
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    await closing
    server = undefined
    await expect(get(url + '/', { timeout: 1000 })).rejects.toThrow(/ECONNREFUSED/)
  })

  it('drains on close a worker a rolling restart is draining, and one busy in a long synchronous render', async () => {
    server = await serve({ ...base, workers: 1, shutdownTimeout: 8000 })
    const url = server.url
    // A slow request on the worker a rolling restart replaces: still in flight when close() comes.
    const slow = get(url + '/slow?ms=2500')
    await waitFor('request in flight', () => server!.status()[0]!.inflight === 1)
    void server.restart()
    await waitFor('old worker draining', () => server!.status()[0]!.state === 'replacing')
    await new Promise((resolve) => setTimeout(resolve, 1500))
    // The replacement serves; it goes busy for 2.5 s in one synchronous stretch (its
    // heartbeat stops for longer than heartbeatTimeout) with a request in flight.
    await waitFor('replacement serving', () => server!.status()[0]!.state === 'ready')
    const spin = get(url + '/spin?ms=2500', { agent: new Agent({ keepAlive: false }) })
    await new Promise((resolve) => setTimeout(resolve, 1300))
    await server.close()
    server = undefined
    expect((await slow).status).toBe(200)
    expect((await spin).status).toBe(200)
  })

  it('reports the request cut when a worker still busy in a synchronous render is terminated at shutdownTimeout', async () => {
    const warnings: string[] = []
    const logger = { info () {}, warn (obj: object, msg: string) { warnings.push(`${msg} ${JSON.stringify(obj)}`) }, error () {} }
    server = await serve({ ...base, workers: 1, shutdownTimeout: 1000, logger })
    // One synchronous stretch past the shutdown budget: the worker never reads its drain message.
    const spin = get(server.url + '/spin?ms=3000').catch((err: Error) => err)
    await waitFor('request in flight', () => server!.status()[0]!.inflight === 1)
    await server.close()
    server = undefined
    expect(await spin).toBeInstanceOf(Error)
    expect(warnings).toContain('worker terminated by shutdownTimeout before it finished draining {"worker":1,"inflight":1}')
    expect(warnings).toContain('requests cut off by shutdownTimeout {"unfinished":1}')
  })

  it('runs a rolling restart asked for during another once more after it, never two slots at once', async () => {
    server = await serve({ ...base, workers: 2, shutdownTimeout: 3000 })
    let most = 0
    let watching = true
    const watch = (async () => {
      while (watching) {
        most = Math.max(most, server!.status().filter((w) => w.state === 'replacing').length)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })()
    const first = server.restart()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const second = server.restart()
    const third = server.restart()
    await Promise.all([first, second, third])
    watching = false
    await watch
    expect(most).toBe(1)
    // One pass for the first request, one more for the two asked while it ran.
    expect(server.status().map((w) => w.generation)).toEqual([3, 3])
  })

  it('reports the generation of the worker that serves, not of a replacement that failed to start', async () => {
    server = await serve({ ...base, app: fixture('broken-after-first.js'), workers: 1, restartDelay: 50 })
    await server.restart().catch(() => {})
    const answer = await get(server.url + '/')
    expect(answer.json().worker.generation).toBe(1)
    expect(server.status()[0]!.generation).toBe(1)
  })

  it('restarts every worker one at a time with no failed request on kept-alive connections', async () => {
    server = await serve({ ...base, workers: 2, shutdownTimeout: 3000 })
    const url = server.url
    let stop = false
    const tally = { keepAlive: { ok: 0, failed: 0 }, fresh: { ok: 0, failed: 0 } }
    const errors: string[] = []
    const loop = async (kind: 'keepAlive' | 'fresh'): Promise<void> => {
      const agent = kind === 'keepAlive' ? new Agent({ keepAlive: true, maxSockets: 1 }) : undefined
      while (!stop) {
        try {
          const r = await get(url + '/slow?ms=5', { agent, timeout: 5000 })
          if (r.status === 200) tally[kind].ok++
          else { tally[kind].failed++; errors.push(`status ${r.status}`) }
        } catch (err) {
          tally[kind].failed++
          errors.push((err as Error).message)
        }
      }
      agent?.destroy()
    }
    const loops = [loop('keepAlive'), loop('keepAlive'), loop('keepAlive'), loop('fresh'), loop('fresh')]
    await new Promise((resolve) => setTimeout(resolve, 300))
    await server.restart()
    await new Promise((resolve) => setTimeout(resolve, 300))
    stop = true
    await Promise.all(loops)
    console.info('rolling restart under load:', JSON.stringify(tally), errors.slice(0, 5))
    expect(server.status().map((w) => w.generation)).toEqual([2, 2])
    expect(tally.keepAlive.ok).toBeGreaterThan(50)
    expect(tally.fresh.ok).toBeGreaterThan(20)
    expect(tally.keepAlive.failed).toBe(0)
    // A fresh connection still in a closing listener's accept queue is reset by the kernel
    // (net.ipv4.tcp_migrate_req=0): the drain closes the listener right after an accept
    // pass, so this stays rare; it is reported above and bounded here.
    expect(tally.fresh.failed).toBeLessThanOrEqual(Math.ceil((tally.fresh.ok + tally.fresh.failed) * 0.01))
  })

  it('a rolling restart leaves an idle kept-alive connection open for its next request, answered with Connection: close', async () => {
    server = await serve({ ...base, workers: 1, shutdownTimeout: 5000 })
    const socket = connect(server.port, '127.0.0.1')
    await once(socket, 'connect')
    let closedAt: number | undefined
    socket.on('close', () => { closedAt ??= Date.now() })
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
    const ask = async (): Promise<string> => {
      received = ''
      socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
      await waitFor('an answer', () => /\r\n\r\n/.test(received) && /^HTTP\/1\.1 \d+/.test(received), 5000, 10)
      return received
    }
    expect(await ask()).toMatch(/^HTTP\/1\.1 200/)
    const restarted = server.restart()
    await waitFor('the replacement to take over', () => { const w = server!.status()[0]!; return w.generation === 2 && w.state === 'ready' }, 10_000)
    // A client that sends every second or so: its connection, idle now, must still be there.
    await new Promise((resolve) => setTimeout(resolve, 800))
    expect(closedAt).toBeUndefined()
    const head = (await ask()).split('\r\n\r\n')[0]!
    expect(head).toMatch(/^HTTP\/1\.1 200/)
    expect(head.toLowerCase()).toContain('connection: close')
    await restarted
    socket.destroy()
  })
})
