// `spindle start --mode pool`: one Fastify worker, the adapter (no `threads` in the app)
// renders in as many pool threads as -w says, under the same supervisor, signals and probes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { Agent, request } from 'undici'
import { buildApp } from './fixtures/build.ts'

const CLI = fileURLToPath(new URL('../../runtime/bin/spindle.js', import.meta.url))
const APP = fileURLToPath(new URL('./fixtures/pool-mode-app.js', import.meta.url))

let child: ChildProcess
let exit: Promise<number | null>
let out = ''
let err = ''
let url: string
let control: string

async function waitFor<T> (what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeout = 30_000): Promise<T> {
  const deadline = Date.now() + timeout
  while (Date.now() < deadline) {
    const value = await check()
    if (value) return value
    if (child.exitCode !== null) throw new Error(`spindle exited (${child.exitCode}) waiting for ${what}: ${err}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}\n${out}\n${err}`)
}

async function json (target: string, dispatcher?: Agent): Promise<{ status: number, body: any }> {
  const res = await request(target, dispatcher ? { dispatcher } : {})
  return { status: res.statusCode, body: await res.body.json() }
}

beforeAll(async () => {
  buildApp()
  child = spawn(process.execPath, [CLI, 'start', APP, '--mode', 'pool', '-w', '2', '-p', '0', '-H', '127.0.0.1', '--control-port', '0', '--shutdown-timeout', '5000'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FIXTURE_HANG_TIMEOUT: '1000' },
  })
  child.stdout!.on('data', (c: Buffer) => { out += c })
  child.stderr!.on('data', (c: Buffer) => { err += c })
  exit = once(child, 'exit').then(([code]) => code as number | null)
  await waitFor('the start-up banner', () => {
    url = /url\s+(http:\/\/\S+)/.exec(out)?.[1] ?? ''
    control = /control\s+(http:\/\/\S+)/.exec(out)?.[1] ?? ''
    return url && control
  }, 120_000)
}, 240_000)

afterAll(() => { if (child?.exitCode === null) child.kill('SIGKILL') })

describe('spindle start --mode pool', () => {
  it('runs one Fastify worker whose adapter renders in -w pool threads, and says so', async () => {
    expect(out).toContain('renders in 2 pool threads (pool mode)')
    expect(err).toContain('pool mode: one Fastify worker, renders in a pool of threads  mode=pool reason=mode: pool workers=1 poolThreads=2')
    const status = (await json(control + '/status')).body
    expect(status).toMatchObject({ mode: 'pool', poolThreads: 2, ready: true })
    expect(status.workers).toHaveLength(1)
    const threads = new Set<number>()
    for (let i = 0; i < 20 && threads.size < 2; i++) {
      for (const res of await Promise.all([1, 2, 3, 4].map(() => json(url + '/nap?ms=20')))) {
        expect(res.status).toBe(200)
        // The worker's young generation (youngGenerationMb, 96 MB), not V8's own for a thread.
        expect(res.body.young).toBe(96)
        threads.add(res.body.thread)
      }
    }
    expect(threads.size).toBe(2)
    expect(threads.has(status.workers[0].threadId)).toBe(false)
  })

  it("lets the pool admit its renders: the worker's render queue does not hold them back while the Fastify thread is busy", async () => {
    // The Fastify thread never idles (its own route spins), so a render queue would start
    // renders two at a time: 8 renders of 1.5 s would take 4 x 1.5 s. The pool's 2 threads
    // x 4 slots take all 8 at once.
    let spinning = true
    // Two clients, so a spin is always waiting when one ends.
    const spin = Promise.all([1, 2].map(async () => { while (spinning) await request(url + '/spin?ms=30').then((r) => r.body.dump()) }))
    const started = Date.now()
    const answers = await Promise.all(Array.from({ length: 8 }, () => json(url + '/nap?ms=1500')))
    const took = Date.now() - started
    spinning = false
    await spin
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200))
    expect(took).toBeLessThan(3500)
  })

  it("logs a pool thread's crash in the runtime's own log, though the app's logger is off", async () => {
    const before = err.length
    const crashed = await request(url + '/crash')
    await crashed.body.dump()
    expect(crashed.statusCode).toBe(502)
    await waitFor('the crash in the supervisor log', () => err.slice(before).includes('render pool thread failed'), 10_000)
    expect(err.slice(before)).toMatch(/error: render pool thread failed.*worker=1/)
    // The pool serves on.
    expect((await request(url + '/')).statusCode).toBe(200)
    // Counted where an operator alerts on it, as a worker's restarts are.
    const status = await waitFor('the lost thread in /status', async () => {
      const body = (await json(control + '/status')).body
      return body.workers[0].poolThreadsLost.crashed === 1 && body
    }, 10_000)
    expect(status.workers[0].poolThreadsLost).toEqual({ crashed: 1, hung: 0 })
    const metrics = await (await request(control + '/metrics')).body.text()
    expect(metrics).toMatch(/^spindle_pool_threads_lost_total\{reason="crashed"\} 1$/m)
    expect(metrics).toMatch(/^spindle_pool_threads_lost_total\{reason="hung"\} 0$/m)
    expect(metrics).toMatch(/^spindle_worker_pool_threads_lost_total\{worker="1",reason="crashed"\} 1$/m)
  })

  it('ends a stuck pool thread, counts it once as hung, and serves on', async () => {
    const stuck = await request(url + '/hang')
    await stuck.body.dump()
    expect(stuck.statusCode).toBe(502)
    const status = await waitFor('the hung thread in /status', async () => {
      const body = (await json(control + '/status')).body
      return body.workers[0].poolThreadsLost.hung === 1 && body
    }, 10_000)
    // Ended by the hang watch, not also taken for a crash when it exits.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await json(control + '/status')).body.workers[0].poolThreadsLost).toEqual({ crashed: 1, hung: 1 })
    expect(status.workers[0].poolThreadsLost.crashed).toBe(1)
    expect(err).toMatch(/render pool thread stuck for 1000 ms/)
    expect((await request(url + '/')).statusCode).toBe(200)
  })

  it('replaces the worker and its pool on SIGHUP while serving', async () => {
    const agent = new Agent({ connections: 4 })
    let stop = false
    const statuses: Array<number | string> = []
    const load = (async () => {
      while (!stop) {
        try { statuses.push((await json(url + '/nap?ms=5', agent)).status) } catch (e) { statuses.push((e as Error).message) }
      }
    })()
    child.kill('SIGHUP')
    await waitFor('the rolling restart to finish', () => err.includes('rolling restart done'), 60_000)
    stop = true
    await load
    await agent.close()
    const status = (await json(control + '/status')).body
    expect(status.workers[0]).toMatchObject({ generation: 2, state: 'ready' })
    expect(statuses.length).toBeGreaterThan(10)
    expect(statuses.filter((s) => s !== 200)).toEqual([])
  })

  it("warms every thread of the replacement's pool, not only the first one the least-busy dispatch picks", async () => {
    expect(err).toMatch(/replacement warmed up before taking traffic.*requests=200\b/)
    // 100 warm-up requests for / in pool mode, each sent once per thread at once: each
    // thread did its share. Sent one after another, all went to the first thread.
    const warmups = new Map<number, number>()
    for (let i = 0; i < 20 && warmups.size < 2; i++) {
      for (const res of await Promise.all([1, 2, 3, 4].map(() => json(url + '/nap?ms=20')))) warmups.set(res.body.thread, res.body.warmups)
    }
    expect(warmups.size).toBe(2)
    for (const count of warmups.values()) expect(count).toBeGreaterThanOrEqual(50)
  })

  it('with --no-shedding the pool sheds nothing either: a burst far past maxBacklog is served in full', async () => {
    const loose = spawn(process.execPath, [CLI, 'start', APP, '--mode', 'pool', '-w', '1', '--no-shedding', '-p', '0', '-H', '127.0.0.1', '--no-control'], { stdio: ['ignore', 'pipe', 'ignore'] })
    let banner = ''
    loose.stdout!.on('data', (c: Buffer) => { banner += c })
    try {
      const base = await waitFor('the second server', () => /url\s+(http:\/\/\S+)/.exec(banner)?.[1], 60_000)
      // Warm: the pool's admission holds nothing back until a few renders have ended.
      for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: 4 }, () => json(base + '/nap?ms=250')))
      // 1 thread x 4 slots, 24 renders of 250 ms: the last would wait 1.5 s, past maxBacklog (1 s).
      const answers = await Promise.all(Array.from({ length: 24 }, () => request(base + '/nap?ms=250').then(async (r) => { await r.body.dump(); return r.statusCode })))
      expect(answers).toEqual(Array(24).fill(200))
    } finally {
      loose.kill('SIGKILL')
    }
  })

  it('drains on SIGTERM: a render in flight finishes, then the process exits 0', async () => {
    const slow = json(url + '/nap?ms=800')
    await new Promise((resolve) => setTimeout(resolve, 200))
    child.kill('SIGTERM')
    expect((await slow).status).toBe(200)
    expect(await exit).toBe(0)
  })
})
