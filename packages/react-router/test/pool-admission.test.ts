// The render pool's admission answered and reported like a worker's: under `spindle start
// --mode pool` a refused render is a shed (503, Retry-After, Cache-Control: no-store,
// X-Spindle-Shed), counted by reason in /status and /metrics, and the pool's admission state
// is the worker's; in a server of your own it goes through the loadShedding plugin when one
// is registered, else it is the coded error with the same headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { Agent, request } from 'undici'
import { loadShedding } from '@spindle/runtime'
import { reactRouterAdapter } from '@spindle/react-router'
import { buildApp, serverBuild } from './fixtures/build.ts'

const CLI = fileURLToPath(new URL('../../runtime/bin/spindle.js', import.meta.url))
const APP = fileURLToPath(new URL('./fixtures/pool-admission-app.js', import.meta.url))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Answer { status: number, headers: Record<string, string | string[] | undefined>, body: string }

async function get (target: string, dispatcher?: Agent): Promise<Answer> {
  const res = await request(target, dispatcher ? { dispatcher } : {})
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

async function waitFor<T> (what: string, check: () => Promise<T | undefined | false>, timeout = 30_000): Promise<T> {
  const deadline = Date.now() + timeout
  while (Date.now() < deadline) {
    const value = await check()
    if (value) return value
    await sleep(50)
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** Renders of `ms` that take a pool slot each, one after another: the pool learns how long one takes. */
async function warm (base: string, ms: number): Promise<void> {
  for (let i = 0; i < 6; i++) expect((await get(`${base}/spin?ms=${ms}`)).status).toBe(200)
}

function expectShed (answer: Answer): void {
  expect(answer.status).toBe(503)
  expect(answer.headers['retry-after']).toBe('1')
  expect(answer.headers['cache-control']).toBe('no-store')
  expect(['backlog', 'overload']).toContain(answer.headers['x-spindle-shed'])
}

describe('spindle start --mode pool: the pool sheds and reports like a worker', () => {
  let child: ChildProcess
  let out = ''
  let url = ''
  let control = ''

  beforeAll(async () => {
    buildApp()
    child = spawn(process.execPath, [CLI, 'start', APP, '--mode', 'pool', '-w', '1', '-p', '0', '-H', '127.0.0.1', '--control-port', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    child.stdout!.on('data', (c: Buffer) => { out += c })
    await waitFor('the start-up banner', async () => {
      url = /url\s+(http:\/\/\S+)/.exec(out)?.[1] ?? ''
      control = /control\s+(http:\/\/\S+)/.exec(out)?.[1] ?? ''
      return url && control
    }, 120_000)
  }, 180_000)

  afterAll(() => { if (child?.exitCode === null) child.kill('SIGKILL') })

  it('answers an overload with shed 503s counted by reason, and shows the admission state in /status and /metrics', async () => {
    await warm(url, 200)
    const status = async () => JSON.parse((await get(control + '/status')).body).workers[0]
    expect((await status()).admission).toBe('normal')

    // Open arrivals at 4x what one slot of 200 ms of CPU serves, for 1.6 s: the queue fills
    // the 600 ms budget (backlog), keeps overflowing it (shedding), and is cut to a render
    // (overload). The renders spin: a render that only waits would let more start on idle time.
    const agent = new Agent({ connections: 64 })
    const states = new Set<string>()
    let polling = true
    const poll = (async () => { while (polling) { states.add((await status()).admission); await sleep(20) } })()
    const answers = await Promise.all(Array.from({ length: 32 }, async (_, i) => {
      await sleep(i * 50)
      return get(`${url}/spin?ms=200`, agent)
    }))
    polling = false
    await poll
    await agent.close()

    const served = answers.filter((a) => a.status === 200)
    const shed = answers.filter((a) => a.status !== 200)
    expect(served.length).toBeGreaterThan(0)
    expect(shed.length).toBeGreaterThan(0)
    for (const a of shed) {
      expectShed(a)
      expect(a.body).toBe('Service Unavailable\n')
    }
    const byReason = (reason: string) => shed.filter((a) => a.headers['x-spindle-shed'] === reason).length
    expect(byReason('backlog')).toBeGreaterThan(0)
    expect(byReason('overload')).toBeGreaterThan(0)
    expect(states).toContain('shedding')

    // Once the load stops, the state comes back to normal without another request.
    const after = await waitFor('admission back to normal', async () => {
      const w = await status()
      return w.admission === 'normal' && w
    }, 10_000)
    expect(after.shed).toMatchObject({ backlog: byReason('backlog'), overload: byReason('overload') })

    const metrics = (await get(control + '/metrics')).body
    const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1])
    expect(value('spindle_shed_requests_total{reason="backlog"}')).toBe(byReason('backlog'))
    expect(value('spindle_shed_requests_total{reason="overload"}')).toBe(byReason('overload'))
    expect(value('spindle_worker_shed_requests_total{worker="1",reason="overload"}')).toBe(byReason('overload'))
    expect(value('spindle_worker_admission_state{worker="1",state="normal"}')).toBe(1)
    // A shed request reached the adapter's handler but rendered nothing.
    expect(value('spindle_http_renders_total')).toBe(6 + served.length)
  }, 60_000)

  it('while SIGHUP replaces the worker, the old one queues a burst of up to twice the pool\'s budget instead of shedding it', async () => {
    for (let i = 0; i < 6; i++) expect((await get(`${url}/nap?ms=200`)).status).toBe(200)
    const status = async () => JSON.parse((await get(control + '/status')).body)
    expect((await status()).restarting).toBe(false)
    // One slot of 200 ms and a 600 ms budget: of 6 at once, one runs, three wait and two are refused.
    const agent = new Agent({ connections: 6 })
    const burst = () => Promise.all(Array.from({ length: 6 }, () => get(`${url}/nap?ms=200`, agent)))
    const before = await burst()
    expect(before.filter((a) => a.status !== 200).length).toBeGreaterThanOrEqual(1)
    await sleep(300)
    // The same burst, over the same connections, while the replacement starts beside the old worker.
    child.kill('SIGHUP')
    await waitFor('the replacement to start', async () => {
      const s = await status()
      return s.restarting && s.workers[0].state === 'replacing'
    })
    const during = await burst()
    await agent.close()
    expect(during.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    await waitFor('the rolling restart to end', async () => !(await status()).restarting, 30_000)
  }, 60_000)
})

describe('reactRouterAdapter with threads in a server of your own: the pool refuses like the loadShedding plugin', () => {
  let plain: FastifyInstance
  let shedding: FastifyInstance
  let plainUrl: string
  const plainErrors: unknown[] = []
  let sheddingUrl: string
  const pool = { build: serverBuild, threads: 1, threadConcurrency: 1, maxBacklog: 600 }

  beforeAll(async () => {
    buildApp()
    plain = Fastify({ logger: false })
    // A refusal is sent as is: it never reaches the app's error handler.
    plain.setErrorHandler((error, _request, reply) => {
      plainErrors.push(error)
      void reply.send(error)
    })
    await plain.register(reactRouterAdapter, pool)
    plainUrl = await plain.listen({ port: 0, host: '127.0.0.1' })
    shedding = Fastify({ logger: false })
    await shedding.register(loadShedding)
    await shedding.register(reactRouterAdapter, pool)
    sheddingUrl = await shedding.listen({ port: 0, host: '127.0.0.1' })
  }, 120_000)

  afterAll(async () => {
    await plain?.close()
    await shedding?.close()
  })

  // One slot of 200 ms and a 600 ms budget: of 8 at once, one runs and three wait (200, 400
  // and 600 ms); the other four are refused on arrival.
  const burst = (base: string) => Promise.all(Array.from({ length: 8 }, () => get(`${base}/nap?ms=200`)))

  it('with the plugin: shed through it, counted in shedCounts() by reason', async () => {
    await warm(sheddingUrl, 200)
    const answers = await burst(sheddingUrl)
    const shed = answers.filter((a) => a.status !== 200)
    expect(shed.length).toBeGreaterThan(0)
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0)
    for (const a of shed) {
      expectShed(a)
      expect(a.headers['x-spindle-shed']).toBe('backlog')
      expect(a.body).toBe('Service Unavailable\n')
    }
    expect(shedding.shedCounts().backlog).toBe(shed.length)
  }, 30_000)

  it('without it: the coded error SPINDLE_RUNTIME_POOL_OVERLOADED with the same headers', async () => {
    await warm(plainUrl, 200)
    const answers = await burst(plainUrl)
    const shed = answers.filter((a) => a.status !== 200)
    expect(shed.length).toBeGreaterThan(0)
    for (const a of shed) {
      expectShed(a)
      expect(a.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(JSON.parse(a.body)).toEqual({
        statusCode: 503,
        code: 'SPINDLE_RUNTIME_POOL_OVERLOADED',
        error: 'Service Unavailable',
        message: `The render pool cannot start this request in time (${a.headers['x-spindle-shed']})`,
      })
    }
    expect(plainErrors).toEqual([])
  }, 30_000)
})
