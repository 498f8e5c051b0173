import { afterEach, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { serve, type SpindleServer } from '@spindle/runtime'
import { fixture, get } from './helpers.ts'

const CLI = fileURLToPath(new URL('../bin/spindle.js', import.meta.url))

let server: SpindleServer | undefined
const children: ChildProcess[] = []
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
  await server?.close()
  server = undefined
})

describe('worker safety', () => {
  it('keeps serving, and logs it, when the app leaves a promise rejection unhandled', async () => {
    const errors: Array<{ fields: Record<string, unknown>, msg: string }> = []
    const logger = { info () {}, warn () {}, error (fields: Record<string, unknown>, msg: string) { errors.push({ fields, msg }) } }
    server = await serve({ app: fixture('unhandled-rejection.js'), workers: 1, port: 0, controlPort: false, handleSignals: false, host: '127.0.0.1', logger })
    const first = await get(server.url + '/forget')
    expect(first.status).toBe(200)
    // Node's default would end the thread: the next requests would wait for a new worker.
    await new Promise((resolve) => setTimeout(resolve, 200))
    for (let i = 0; i < 5; i++) expect((await get(server.url + '/')).json().thread).toBe(first.json().thread)
    expect(server.status()[0]!.restarts).toBe(0)
    expect(errors.some((e) => e.msg === 'unhandled promise rejection in a worker' && String(e.fields.err).includes('nobody awaited this'))).toBe(true)
  })

  it('exits 0 on a SIGTERM that comes before the supervisor exists (options being checked)', async () => {
    const child = spawn(process.execPath, [CLI, 'start', fixture('slow-start.js'), '-w', '2', '-p', '0', '-H', '127.0.0.1', '--no-control'], {
      env: { ...process.env, SLOW_START_MS: '20000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    let err = ''
    const exit = once(child, 'exit')
    // The banner is written right before serve() begins: the signal meets its first steps
    // (or the end of the CLI's own, which hold signals for serve() from the start).
    await new Promise<void>((resolve) => child.stderr!.on('data', (c: Buffer) => { err += c; if (err.includes('starting 2 workers')) resolve() }))
    child.kill('SIGTERM')
    const [code, signal] = await exit
    expect({ code, signal }, err).toEqual({ code: 0, signal: null })
  })

  it('exits 0 at once on SIGTERM while the workers are still starting', async () => {
    const child = spawn(process.execPath, [CLI, 'start', fixture('slow-start.js'), '-w', '2', '-p', '0', '-H', '127.0.0.1', '--no-control'], {
      env: { ...process.env, SLOW_START_MS: '20000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    let err = ''
    child.stderr!.on('data', (c: Buffer) => { err += c })
    const exit = once(child, 'exit')
    // The workers are loading the app (its plugin waits 20 s) when the signal comes.
    const deadline = Date.now() + 10_000
    while (!err.includes('starting 2 workers') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    await new Promise((resolve) => setTimeout(resolve, 500))
    const sent = Date.now()
    child.kill('SIGTERM')
    const [code] = await exit
    expect(code, err).toBe(0)
    expect(Date.now() - sent).toBeLessThan(5000)
  })
})
