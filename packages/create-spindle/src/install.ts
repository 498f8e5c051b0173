import { spawn } from 'node:child_process'
import type { PackageManager } from './args.ts'
import { SPINDLE_CREATE_INSTALL_FAILED } from './errors.ts'

/**
 * Runs `<pm> install` in `root`. Its output goes to `log` (a terminal, or a progress
 * line) rather than inherited, so the caller decides how much to show.
 */
export function install (root: string, pm: PackageManager, log: (chunk: string) => void): Promise<void> {
  const args = pm === 'pnpm' ? ['install'] : ['install', '--no-audit', '--no-fund']
  return new Promise((resolve, reject) => {
    const child = spawn(pm, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.setEncoding('utf8').on('data', log)
    child.stderr.setEncoding('utf8').on('data', log)
    child.on('error', (err) => reject(new SPINDLE_CREATE_INSTALL_FAILED(`${pm} install`, root, err.message)))
    child.on('close', (code) => {
      if (code === 0) resolve()
      else reject(new SPINDLE_CREATE_INSTALL_FAILED(`${pm} install`, root, String(code)))
    })
  })
}
