import { afterEach, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { Agent } from 'node:http'
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
    expect(r.stdout()).toContain('workers  1 thread on one port (SO_REUSEPORT)')
    expect((await get(control + '/status')).json()).toMatchObject({ mode: 'reusePort', poolThreads: 0 })
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })

  it('runs the app with NODE_ENV=production when it is unset, as next start and react-router-serve do, and keeps a value that is set', async () => {
    // Unset, React (and any library that reads NODE_ENV) would run its development build,
    // at twice the CPU per page.
    const unset = run(['start', fixture('app.js'), '-w', '1', '-p', '0', '-H', '127.0.0.1', '--control-port', '0'], { env: { NODE_ENV: '' } })
    const { url } = await started(unset)
    expect((await get(url + '/env?name=NODE_ENV')).json()).toEqual({ value: 'production' })
    unset.child.kill('SIGTERM')
    expect(await unset.exit).toBe(0)
    const set = run(['start', fixture('app.js'), '-w', '1', '-p', '0', '-H', '127.0.0.1', '--control-port', '0'], { env: { NODE_ENV: 'staging' } })
    expect((await get((await started(set)).url + '/env?name=NODE_ENV')).json()).toEqual({ value: 'staging' })
    set.child.kill('SIGTERM')
    expect(await set.exit).toBe(0)
  })

  it('keeps a SPINDLE_POOL_THREADS left in its own environment from reusePort workers, and says so', async () => {
    const r = run(['start', fixture('app.js'), '--mode', 'reusePort', '-w', '1', '-p', '0', '-H', '127.0.0.1', '--control-port', '0'], { env: { SPINDLE_POOL_THREADS: '3' } })
    const { url } = await started(r)
    expect((await get(url + '/env?name=SPINDLE_POOL_THREADS')).json()).toEqual({ value: '0' })
    expect(r.stderr()).toContain('SPINDLE_POOL_THREADS in the environment is ignored')
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

  it('refuses a millisecond option past what a timer takes, from a flag or the environment, naming the option', async () => {
    // Node runs a longer timer after 1 ms: a shutdown would cut every request at once.
    for (const r of [
      run(['start', fixture('app.js'), '--port', '0', '--no-control', '--shutdown-timeout', '3000000000']),
      run(['start', fixture('app.js'), '--port', '0', '--no-control'], { env: { SPINDLE_SHUTDOWN_TIMEOUT: '2147483648' } }),
    ]) {
      expect(await r.exit).toBe(1)
      expect(r.stderr()).toMatch(/SPINDLE_RUNTIME_INVALID_OPTION: shutdownTimeout must be a positive number of milliseconds, at most 2147483647, got (3000000000|2147483648)/)
      expect(r.stderr()).not.toContain('starting')
    }
  })

  it('refuses --no-control with --control-port or --control-host, naming both flags', async () => {
    const r = run(['start', fixture('app.js'), '--port', '0', '--no-control', '--control-port', '4201'])
    expect(await r.exit).toBe(2)
    expect(r.stderr()).toContain('SPINDLE_RUNTIME_CLI_USAGE: --no-control and --control-port contradict each other')
    const h = run(['start', fixture('app.js'), '--port', '0', '--no-control', '--control-host', '0.0.0.0'])
    expect(await h.exit).toBe(2)
    expect(h.stderr()).toContain('SPINDLE_RUNTIME_CLI_USAGE: --no-control and --control-host contradict each other')
  })

  it('refuses a control host it cannot listen on before any worker loads the app, naming controlHost', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-cli-'))
    const marker = join(dir, 'loaded')
    // The app leaves a file behind when a worker imports it.
    writeFileSync(join(dir, 'app.mjs'), `import { writeFileSync } from 'node:fs'\nwriteFileSync(${JSON.stringify(marker)}, '')\nexport default async function app () {}\n`)
    const r = run(['start', join(dir, 'app.mjs'), '--port', '0', '-w', '1', '--control-host', '999.1.1.1', '--control-port', '0'])
    expect(await r.exit).toBe(1)
    expect(r.stderr()).toContain('SPINDLE_RUNTIME_INVALID_OPTION: controlHost "999.1.1.1" cannot be listened on')
    expect(existsSync(marker)).toBe(false)
  })

  it('refuses a host it cannot listen on before any worker loads the app, naming host', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-cli-'))
    const marker = join(dir, 'loaded')
    writeFileSync(join(dir, 'app.mjs'), `import { writeFileSync } from 'node:fs'\nwriteFileSync(${JSON.stringify(marker)}, '')\nexport default async function app () {}\n`)
    // TEST-NET-1 (RFC 5737): never an address of this machine.
    const r = run(['start', join(dir, 'app.mjs'), '--port', '0', '-w', '1', '--host', '192.0.2.1', '--no-control'])
    expect(await r.exit).toBe(1)
    expect(r.stderr()).toContain('SPINDLE_RUNTIME_INVALID_OPTION: host "192.0.2.1" cannot be listened on')
    expect(existsSync(marker)).toBe(false)
  })

  it('refuses a flag given an empty value (a script\'s unset variable) instead of taking the default', async () => {
    for (const flag of ['--port', '--workers', '--shutdown-timeout', '--control-port', '--mode']) {
      const r = run(['start', fixture('app.js'), flag, ''], { env: { PORT: '0' } })
      expect(await r.exit, flag).toBe(2)
      expect(r.stderr()).toContain(`SPINDLE_RUNTIME_CLI_USAGE: ${flag} needs a value, got an empty string`)
    }
  })

  it('refuses --control-host without --control-port in dev, where no control server runs by default', async () => {
    const r = run(['dev', fixture('app.js'), '--control-host', '127.0.0.1'])
    expect(await r.exit).toBe(2)
    expect(r.stderr()).toContain('--control-host alone does nothing')
  })

  it('takes a config file whose default export is a promise, and checks what it resolves to', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-cli-'))
    const config = (options: string): string =>
      `export default new Promise((resolve) => setTimeout(() => resolve({ app: ${JSON.stringify(fixture('app.js'))}, controlPort: 0, ${options} }), 50))\n`
    writeFileSync(join(dir, 'spindle.config.mjs'), config('workers: 1, wokers: 2'))
    const typo = run(['start', '-p', '0', '-H', '127.0.0.1'], { cwd: dir })
    expect(await typo.exit).toBe(1)
    expect(typo.stderr()).toContain('SPINDLE_RUNTIME_INVALID_OPTION: unknown option "wokers"')
    writeFileSync(join(dir, 'spindle.config.mjs'), config('workers: 1'))
    const r = run(['start', '-p', '0', '-H', '127.0.0.1'], { cwd: dir })
    const { control } = await started(r)
    expect((await get(control + '/status')).json().workers).toHaveLength(1)
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })

  it('ignores a SIGHUP that comes while the config file loads, with a warning, and starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-cli-'))
    writeFileSync(join(dir, 'spindle.config.mjs'), [
      "process.stderr.write('config loading\\n')",
      'await new Promise((resolve) => setTimeout(resolve, 1000))',
      `export default { app: ${JSON.stringify(fixture('app.js'))}, workers: 1, controlPort: 0 }`,
    ].join('\n') + '\n')
    const r = run(['start', '-p', '0', '-H', '127.0.0.1'], { cwd: dir })
    await waitFor('the config file to load', () => r.stderr().includes('config loading'))
    r.child.kill('SIGHUP')
    await started(r)
    expect(r.stderr()).toContain('warn: SIGHUP while the workers start: ignored')
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
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

  it('takes a signal sent again at once (Ctrl-C passed on by node --watch) as the same one: it drains and exits 0; a later second signal exits 1 at once', async () => {
    const r = run(['start', fixture('app.js'), '-w', '1', '-p', '0', '-H', '127.0.0.1', '--control-port', '0', '--shutdown-timeout', '5000'])
    const { url, control } = await started(r)
    const slow = get(url + '/slow?ms=1500')
    await waitFor('the request in flight', async () => (await get(control + '/status')).json().workers[0].inflight === 1)
    r.child.kill('SIGINT')
    r.child.kill('SIGINT')
    expect((await slow).status).toBe(200)
    expect(await r.exit).toBe(0)
    expect(r.stderr()).not.toContain('second signal')

    const again = run(['start', fixture('app.js'), '-w', '1', '-p', '0', '-H', '127.0.0.1', '--control-port', '0', '--shutdown-timeout', '5000'])
    const second = await started(again)
    const held = get(second.url + '/slow?ms=3000').catch(() => undefined)
    await waitFor('the request in flight', async () => (await get(second.control + '/status')).json().workers[0].inflight === 1)
    again.child.kill('SIGINT')
    await new Promise((resolve) => setTimeout(resolve, 800))
    const forcedAt = Date.now()
    again.child.kill('SIGINT')
    expect(await again.exit).toBe(1)
    expect(Date.now() - forcedAt).toBeLessThan(1000)
    expect(again.stderr()).toContain('second signal: exiting now')
    await held
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
    await waitFor('the rolling restart to finish', () => r.stderr().includes('rolling restart done  replaced=2'))
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })

  it('warns when the replacements of a SIGHUP fail to start, saying how many', async () => {
    const r = run(['start', fixture('broken-after-first.js'), '--port', '0', '--control-port', '0', '-w', '2', '-H', '127.0.0.1'])
    await started(r)
    r.child.kill('SIGHUP')
    await waitFor('the rolling restart to finish', () => /rolling restart done/.test(r.stderr()))
    expect(r.stderr()).toContain('[spindle] warn: rolling restart done, but replacements failed to start: those slots still run the previous app  replaced=0 failed=2')
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
  })

  it('does not report a replacement that a SIGTERM stops during a rolling restart as failed', async () => {
    const r = run(['start', fixture('slow-start.js'), '--port', '0', '--control-port', '0', '-w', '1', '-H', '127.0.0.1'], { env: { SLOW_START_MS: '1500' } })
    const { url } = await started(r)
    // A kept-alive connection holds the old worker's drain for its idle grace: the lines of the
    // stopped replacement are written before the process exits.
    const agent = new Agent({ keepAlive: true })
    expect((await get(url + '/', { agent })).status).toBe(200)
    r.child.kill('SIGHUP')
    await waitFor('the replacement to start', () => r.stderr().includes('replacing worker'))
    r.child.kill('SIGTERM')
    expect(await r.exit).toBe(0)
    agent.destroy()
    expect(r.stderr()).not.toContain('failed to start')
    expect(r.stderr()).not.toContain('rolling restart done')
    expect(r.stderr()).toContain('rolling restart cut short by shutdown')
  })
})
