import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const cli = fileURLToPath(new URL('../../bin/create-spindle.js', import.meta.url))

export interface Exited {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly output: string
}

export interface Running {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<Exited>
}

/**
 * The create-spindle command as a user runs it, without a terminal (so no questions), with
 * no tarball folder from the environment; its exit code and signal are its own.
 */
export function spawnCreateSpindle (args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Running {
  const child = spawn(process.execPath, [cli, ...args], {
    cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: 'true', SPINDLE_CREATE_PACKAGES: '', ...env },
  })
  let output = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  const exited = new Promise<Exited>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, output })))
  return { child, output: () => output, exited }
}
