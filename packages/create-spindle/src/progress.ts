import * as p from '@clack/prompts'
import type { Choices } from './choices.ts'
import { install } from './install.ts'

/**
 * Installs with a spinner showing the package manager's last line on a terminal; in CI or
 * a pipe, a line when it starts and one when it ends (a spinner there only fills the log),
 * and the package manager's output only if it fails.
 */
export async function installWithProgress (root: string, choices: Choices, interactive: boolean, signal?: AbortSignal): Promise<void> {
  const title = `Installing dependencies with ${choices.packageManager}`
  const output: string[] = []
  const spinner = interactive ? p.spinner() : undefined
  if (spinner) spinner.start(title)
  else p.log.step(title)
  const started = Date.now()
  try {
    await install(root, choices.packageManager, (chunk) => {
      output.push(chunk)
      const line = chunk.trim().split('\n').at(-1)?.trim()
      if (line && spinner) spinner.message(`${title}: ${line.slice(0, 60)}`)
    }, signal)
  } catch (err) {
    if (spinner) spinner.error('Install failed')
    const tail = output.join('').trim().split('\n').slice(-20).join('\n')
    if (tail !== '') p.log.error(tail)
    throw err
  }
  const done = `Dependencies installed in ${((Date.now() - started) / 1000).toFixed(1)} s`
  if (spinner) spinner.stop(done)
  else p.log.success(done)
}
