import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnCreateSpindle, type Exited } from './helpers/cli.ts'

// create-spindle stopped while it writes the project (Ctrl-C, SIGTERM) or while it installs
// it: a half-written project must never be left behind, and a complete one never removed.

let workspace: string
beforeAll(() => { workspace = mkdtempSync(join(tmpdir(), 'create-spindle-stop-')) })
afterAll(() => { rmSync(workspace, { recursive: true, force: true }) })

/** The state letter of a process in /proc (T: stopped, Z: exited), or undefined once it is gone. */
function processState (pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}

/** Whether package.json, which create-spindle writes last, is in `dir` or a folder of it. */
function hasPackageJson (dir: string): boolean {
  return [dir, ...readdirSync(dir).map((entry) => join(dir, entry))].some((d) => existsSync(join(d, 'package.json')))
}

/**
 * Runs create-spindle into `target` (relative to `cwd`) and sends it `signal` while the
 * project is half written: it is frozen (SIGSTOP) as soon as something appears in
 * `watched`, and signalled only if package.json, written last, is nowhere yet; then it
 * resumes. Undefined when the freeze came too late, to try again.
 */
async function interruptWhileWriting (cwd: string, target: string, watched: string, signal: NodeJS.Signals): Promise<Exited | undefined> {
  const before = new Set(readdirSync(watched))
  const run = spawnCreateSpindle([target, '--template', 'next', '--typescript', '--no-install'], cwd)
  let halfway: boolean | undefined
  const watcher = watch(watched, () => {
    if (halfway !== undefined || readdirSync(watched).every((entry) => before.has(entry))) return
    run.child.kill('SIGSTOP')
    let state = processState(run.child.pid!)
    while (state !== undefined && state !== 'T' && state !== 'Z') state = processState(run.child.pid!)
    halfway = state === 'T' && !hasPackageJson(watched)
    if (halfway) run.child.kill(signal)
    run.child.kill('SIGCONT')
  })
  const exited = await run.exited
  watcher.close()
  return halfway ? exited : undefined
}

/** Tries `attempt` in fresh folders until it interrupts a run halfway. */
async function halfway (attempt: (cwd: string) => Promise<Exited | undefined>): Promise<{ cwd: string, exited: Exited }> {
  for (let i = 0; i < 5; i++) {
    const cwd = mkdtempSync(join(workspace, 'run-'))
    const exited = await attempt(cwd)
    if (exited !== undefined) return { cwd, exited }
  }
  throw new Error('create-spindle finished writing before it could be stopped, 5 times')
}

describe('create-spindle stopped while it writes the project', () => {
  it.each([['SIGINT', 130], ['SIGTERM', 143]] as const)('on %s removes the new folder, says so and exits %i; the next run succeeds', async (signal, code) => {
    const { cwd, exited } = await halfway((dir) => interruptWhileWriting(dir, 'app', dir, signal))
    expect(exited).toMatchObject({ code, signal: null })
    expect(exited.output).toContain('SPINDLE_CREATE_INTERRUPTED: Interrupted: what was written is removed')
    expect(readdirSync(cwd)).toEqual([])

    const again = await spawnCreateSpindle(['app', '--template', 'next', '--typescript', '--no-install'], cwd).exited
    expect(again.code).toBe(0)
    expect(JSON.parse(readFileSync(join(cwd, 'app', 'package.json'), 'utf8')).name).toBe('app')
    expect(readdirSync(cwd)).toEqual(['app'])
  }, 60_000)

  it('on SIGINT leaves a folder that held only .git as it was', async () => {
    const { cwd, exited } = await halfway((dir) => {
      mkdirSync(join(dir, 'repo', '.git'), { recursive: true })
      return interruptWhileWriting(dir, 'repo', join(dir, 'repo'), 'SIGINT')
    })
    expect(exited).toMatchObject({ code: 130, signal: null })
    expect(exited.output).toContain('what was written is removed')
    expect(readdirSync(join(cwd, 'repo'))).toEqual(['.git'])
  }, 60_000)
})

/** A registry that accepts connections and never answers, so an install hangs in it. */
function silentRegistry (): Promise<{ url: string, sockets: Set<Socket>, connected: Promise<void>, server: Server }> {
  const sockets = new Set<Socket>()
  let onConnection!: () => void
  const connected = new Promise<void>((resolve) => { onConnection = resolve })
  const server = createServer((socket) => {
    sockets.add(socket)
    // Reads (and drops) the request, so the socket sees the client close it.
    socket.resume()
    socket.on('close', () => sockets.delete(socket))
    onConnection()
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number }
    resolve({ url: `http://127.0.0.1:${port}/`, sockets, connected, server })
  }))
}

describe('create-spindle when the install does not finish', () => {
  const projectFiles = ['package.json', 'app.ts', 'Dockerfile', 'k8s/deployment.yaml']

  it('keeps the complete project when the install fails, and says how to retry', async () => {
    const cwd = mkdtempSync(join(workspace, 'install-'))
    // Nothing listens on port 9: the install fails on its first request.
    const env = { npm_config_registry: 'http://127.0.0.1:9/', npm_config_cache: join(cwd, 'npm-cache'), npm_config_fetch_retries: '0' }
    const { code, output } = await spawnCreateSpindle(['app', '--template', 'fastify', '--typescript', '--package-manager', 'npm'], cwd, env).exited
    expect(code).toBe(1)
    expect(output).toContain(`SPINDLE_CREATE_INSTALL_FAILED: \`npm install\` failed in ${join(cwd, 'app')} (exit code 1): the project is written; fix the cause and run it again in that folder`)
    for (const file of projectFiles) expect(existsSync(join(cwd, 'app', file)), file).toBe(true)
  }, 60_000)

  it('on SIGINT stops the install, keeps the project, says how to finish and exits 130', async () => {
    const cwd = mkdtempSync(join(workspace, 'install-'))
    const registry = await silentRegistry()
    try {
      const env = { npm_config_registry: registry.url, npm_config_cache: join(cwd, 'npm-cache') }
      const run = spawnCreateSpindle(['app', '--template', 'fastify', '--typescript', '--package-manager', 'npm'], cwd, env)
      await registry.connected
      run.child.kill('SIGINT')
      const { code, signal, output } = await run.exited
      expect({ code, signal }).toEqual({ code: 130, signal: null })
      const root = join(cwd, 'app')
      expect(output).toContain(`SPINDLE_CREATE_INTERRUPTED: Interrupted: \`npm install\` was stopped; the project in ${root} is complete: run \`npm install\` in that folder to finish`)
      for (const file of projectFiles) expect(existsSync(join(root, file)), file).toBe(true)
      // npm is gone too: its connections to the registry are closed.
      const end = Date.now() + 10_000
      while (registry.sockets.size > 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 50))
      expect(registry.sockets.size).toBe(0)
    } finally {
      for (const socket of registry.sockets) socket.destroy()
      registry.server.close()
    }
  }, 60_000)
})
