import { spawn } from 'node:child_process'
import type { PackageManager } from './args.ts'
import { SPINDLE_CREATE_INSTALL_FAILED, SPINDLE_CREATE_INTERRUPTED } from './errors.ts'

// How long the package manager has to exit after it is told to stop.
const STOP_TIMEOUT_MS = 5000

/**
 * Runs `<pm> install` in `root`. Its output goes to `log` (a terminal, or a progress
 * line) rather than inherited, so the caller decides how much to show. The project is
 * complete by then, so neither a failure nor an abort of `signal` touches it: the error
 * says how to finish the install.
 */
export function install (root: string, pm: PackageManager, log: (chunk: string) => void, signal?: AbortSignal): Promise<void> {
  const command = `${pm} install`
  const args = pm === 'pnpm' ? ['install'] : ['install', '--no-audit', '--no-fund']
  const interrupted = (): Error => new SPINDLE_CREATE_INTERRUPTED(`\`${command}\` was stopped; the project in ${root} is complete: run \`${command}\` in that folder to finish`)
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(interrupted())
      return
    }
    const child = spawn(pm, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    // Ctrl-C in a terminal reaches the package manager as well, but a signal sent to
    // create-spindle alone (kill, a CI runner's timeout) must not leave it running.
    let forceStop: NodeJS.Timeout | undefined
    const stop = (): void => {
      child.kill()
      forceStop = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS).unref()
    }
    const done = (): void => {
      signal?.removeEventListener('abort', stop)
      clearTimeout(forceStop)
    }
    signal?.addEventListener('abort', stop, { once: true })
    child.stdout.setEncoding('utf8').on('data', log)
    child.stderr.setEncoding('utf8').on('data', log)
    child.on('error', (err) => {
      done()
      reject(new SPINDLE_CREATE_INSTALL_FAILED(command, root, err.message))
    })
    child.on('close', (code, killedBy) => {
      done()
      if (signal?.aborted) reject(interrupted())
      else if (code === 0) resolve()
      else reject(new SPINDLE_CREATE_INSTALL_FAILED(command, root, code === null ? `killed by ${killedBy}` : `exit code ${code}`))
    })
  })
}
