import { afterEach, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { busiestScavenges, fixture, get, waitFor } from './helpers.ts'

const CLI = fileURLToPath(new URL('../bin/spindle.js', import.meta.url))

interface Run { child: ChildProcess, stdout: () => string, stderr: () => string, exit: Promise<number | null> }

const running: ChildProcess[] = []
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

function run (args: string[], opts: { cwd?: string, env?: Record<string, string>, node?: string[] } = {}): Run {
  const child = spawn(process.execPath, [...(opts.node ?? []), CLI, ...args], {
    cwd: opts.cwd ?? process.cwd(),
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.push(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (c: Buffer) => { out += c })
  child.stderr!.on('data', (c: Buffer) => { err += c })
  const exit = once(child, 'exit').then(([code]) => code as number | null)
  return { child, stdout: () => out, stderr: () => err, exit }
}

async function started (r: Run): Promise<{ url: string, control: string }> {
  return waitFor('the start-up banner', () => {
    if (r.child.exitCode !== null) throw new Error(`exited ${r.child.exitCode}: ${r.stderr()}`)
    const url = /url\s+(http:\/\/\S+)/.exec(r.stdout())?.[1]
    const control = /control\s+(http:\/\/\S+)/.exec(r.stdout())?.[1]
    return url && control ? { url, control } : undefined
  }, 20_000)
}

describe('spindle CLI', () => {
  it('documents every flag, env var, signal and probe in --help', async () => {
    const r = run(['--help'])
    expect(await r.exit).toBe(0)
    for (const word of ['--workers', '--mode', '--port', '--host', '--control-port', '--no-shedding', '--no-parallel-scavenge', '--shutdown-timeout', '--config',
      'WORKERS', 'PORT', 'HOST', 'SIGTERM', 'SIGHUP', '/readyz', '/healthz', 'spindle.config', 'Node.js >= 22.22']) {
      expect(r.stdout()).toContain(word)
    }
  })

  it('rejects a bad flag value with a usage error that names it', async () => {
    const r = run(['start', fixture('app.js'), '--workers', 'many'])
    expect(await r.exit).toBe(2)
    expect(r.stderr()).toContain('SPINDLE_RUNTIME_CLI_USAGE')
    expect(r.stderr()).toContain('--workers must be a whole number, got "many"')
  })

  it('rejects a bad --mode with the coded option error, before any worker starts', async () => {
    const r = run(['start', fixture('app.js'), '--mode', 'cluster', '--port', '0', '--control-port', '0'])
    expect(await r.exit).toBe(1)
    expect(r.stderr()).toContain('SPINDLE_RUNTIME_INVALID_OPTION')
    expect(r.stderr()).toContain("mode must be 'auto', 'reusePort' or 'pool', got \"cluster\"")
  })

  it('logs the mode it chose and why: auto is reusePort on Linux', async () => {
    const r = run(['start', fixture('app.js'), '--port', '0', '--control-port', '0', '-w', '1', '-H', '127.0.0.1'])
    const { control } = await started(r)
    expect(r.stderr()).toContain('reusePort mode: workers share the port  mode=reusePort reason=mode: auto, and linux balances one port over threads (SO_REUSEPORT)')
    expect((await get(control + '/status')).json()).toMatchObject({ mode: 'reusePort', poolThreads: 0 })
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })

  it("takes mode: 'pool' from the config file: one worker, -w pool threads, SPINDLE_POOL_THREADS in its environment", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-cli-'))
    writeFileSync(join(dir, 'spindle.config.mjs'), `export default { app: ${JSON.stringify(fixture('app.js'))}, mode: 'pool', controlPort: 0 }\n`)
    const r = run(['start', '-w', '3', '-p', '0', '-H', '127.0.0.1'], { cwd: dir })
    const { url, control } = await started(r)
    expect(r.stdout()).toContain('renders in 3 pool threads (pool mode)')
    const status = (await get(control + '/status')).json()
    expect(status).toMatchObject({ mode: 'pool', poolThreads: 3, ready: true })
    expect(status.workers).toHaveLength(1)
    expect((await get(url + '/env?name=SPINDLE_POOL_THREADS')).json()).toEqual({ value: '3' })
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })

  it('rejects an invalid option from the environment, naming the option', async () => {
    const r = run(['start', fixture('app.js'), '--port', '0', '--control-port', '0'], { env: { WORKERS: '0' } })
    expect(await r.exit).toBe(1)
    expect(r.stderr()).toContain('SPINDLE_RUNTIME_INVALID_OPTION')
    expect(r.stderr()).toContain('workers must be a whole number from 1 to 1024, got 0')
  })

  it('names a mistyped key of the config file before it starts anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-cli-'))
    writeFileSync(join(dir, 'spindle.config.mjs'), `export default { app: ${JSON.stringify(fixture('app.js'))}, wrokers: 2, shedding: { maxBaklog: 5 } }\n`)
    const r = run(['start', '--port', '0', '--no-control'], { cwd: dir })
    expect(await r.exit).toBe(1)
    expect(r.stderr()).toMatch(/SPINDLE_RUNTIME_INVALID_OPTION: unknown option "(wrokers|shedding\.maxBaklog)"/)
    expect(r.stderr()).not.toContain('starting')
  })

  it('fails at once with the app\'s own error when the app throws at start-up', async () => {
    const started = Date.now()
    const r = run(['start', fixture('throws-in-plugin.js'), '--port', '0', '--control-port', '0', '--workers', '2'])
    expect(await r.exit).toBe(1)
    expect(Date.now() - started).toBeLessThan(15_000)
    expect(r.stderr()).toContain('SPINDLE_RUNTIME_WORKER_START_FAILED')
    expect(r.stderr()).toContain('database unreachable')
    expect(r.stderr()).toContain('throws-in-plugin.js')
  })

  it('starts from a config file with env overrides, prints a banner, and exits 0 on SIGTERM after in-flight requests finish', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-cli-'))
    writeFileSync(join(dir, 'spindle.config.mjs'), `export default { app: ${JSON.stringify(fixture('app.js'))}, shutdownTimeout: 5000, controlPort: 0 }\n`)
    const r = run(['start'], { cwd: dir, env: { PORT: '0', WORKERS: '2', HOST: '127.0.0.1' } })
    const { url, control } = await started(r)
    expect(r.stdout()).toContain('2 threads on one port')
    expect((await get(control + '/readyz')).status).toBe(200)

    const slow = Array.from({ length: 4 }, () => get(url + '/slow?ms=1500'))
    await waitFor('requests in flight', async () => {
      const status = (await get(control + '/status')).json()
      return status.workers.reduce((n: number, w: { inflight: number }) => n + w.inflight, 0) === 4
    })
    const signalledAt = Date.now()
    r.child.kill('SIGTERM')
    // Readiness flips at once so a load balancer stops sending traffic.
    const readyz = await waitFor('readyz to turn 503', async () => {
      const res = await get(control + '/readyz', { timeout: 500 })
      return res.status === 503 ? res : undefined
    }, 1000, 10)
    expect(readyz.json().shuttingDown).toBe(true)
    const answers = await Promise.all(slow)
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200])
    expect(await r.exit).toBe(0)
    expect(Date.now() - signalledAt).toBeLessThan(5000)
    expect(r.stderr()).toContain('shutting down')
  })

  it('turns load shedding off with --no-shedding: a burst far past the backlog bound is served in full', async () => {
    const r = run(['start', fixture('shed-app.js'), '--no-shedding', '-w', '1', '-p', '0', '-H', '127.0.0.1', '--control-port', '0'])
    const { url, control } = await started(r)
    const render = url + '/render?ms=30&chunks=3'
    for (let i = 0; i < 24; i++) expect((await get(render)).status).toBe(200)
    const burst = await Promise.all(Array.from({ length: 16 }, () => get(render)))
    expect(burst.map((res) => res.status)).toEqual(Array(16).fill(200))
    expect((await get(control + '/status')).json().workers[0].shed.backlog).toBe(0)
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })

  it('makes workers collect their young generation on their own thread with --no-parallel-scavenge', async () => {
    // V8 prints each minor GC with the ms its helper threads spent on it (--trace-gc-nvp).
    const r = run(['start', fixture('app.js'), '--no-parallel-scavenge', '-w', '1', '-p', '0', '-H', '127.0.0.1', '--no-control'], { node: ['--trace-gc-nvp'] })
    const url = await waitFor('the start-up banner', () => /url\s+(http:\/\/\S+)/.exec(r.stdout())?.[1], 20_000)
    for (let i = 0; i < 4; i++) expect((await get(url + '/churn')).status).toBe(200)
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
    const helperMs = busiestScavenges(r.stdout())
    expect(helperMs.length).toBeGreaterThan(10)
    expect(helperMs.every((ms) => ms === 0)).toBe(true)
  })

  it('restarts workers one at a time on SIGHUP', async () => {
    const r = run(['start', fixture('app.js'), '--port', '0', '--control-port', '0', '-w', '2', '-H', '127.0.0.1'])
    const { control } = await started(r)
    r.child.kill('SIGHUP')
    await waitFor('every worker replaced', async () => {
      const status = (await get(control + '/status')).json()
      return status.workers.every((w: { generation: number, state: string }) => w.generation === 2 && w.state === 'ready')
    })
    await waitFor('the rolling restart to finish', () => r.stderr().includes('rolling restart done'))
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })
})
