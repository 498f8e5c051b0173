import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

/** Runs a command to completion; on failure the error carries its output. */
export async function run (command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeout = 180_000): Promise<string> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, {
      cwd, timeout, env: { ...process.env, CI: 'true', NEXT_TELEMETRY_DISABLED: '1', ...env }, maxBuffer: 32 * 1024 * 1024,
    })
    return stdout + stderr
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string, stderr?: string }
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`.slice(-8000), { cause: err })
  }
}

export interface Started {
  readonly url: string
  /** Undefined when the control server is off (spindle dev). */
  readonly controlUrl: string | undefined
  readonly output: () => string
  /** SIGTERM to the whole process group (the package manager and spindle), bounded. */
  readonly stop: () => Promise<number | null>
}

/** Starts a long-running command in its own process group and waits for spindle's url and control lines. */
export function start (command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeout = 90_000): Promise<Started> {
  const child: ChildProcess = spawn(command, args, {
    cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: 'true', NEXT_TELEMETRY_DISABLED: '1', ...env },
  })
  let output = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const stop = async (): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) {
      try { process.kill(-child.pid!, 'SIGTERM') } catch { /* already gone */ }
    }
    const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL') } catch { /* gone */ } }, 15_000)
    const code = await exited
    clearTimeout(timer)
    return code
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { void stop(); reject(new Error(`no url within ${timeout} ms:\n${output}`)) }, timeout)
    const onData = (chunk: Buffer): void => {
      output += chunk.toString()
      const url = /^\s*url\s+(http:\/\/\S+)/m.exec(output)?.[1]
      const control = /^\s*control\s+(\S+)/m.exec(output)?.[1]
      if (url && control) {
        const controlUrl = control === 'disabled' ? undefined : control
        clearTimeout(timer)
        resolve({ url, controlUrl, output: () => output, stop })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`exited with ${code} before listening:\n${output}`)) })
  })
}
