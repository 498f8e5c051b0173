import { constants } from 'node:os'
import * as p from '@clack/prompts'
import { parseArgs, usage } from './args.ts'
import { create, version } from './create.ts'

// The create-spindle command: exit 0 on success, 2 on a usage error, 1 on any other error,
// and 128 + the signal's number (130 for Ctrl-C) when SIGINT or SIGTERM stopped it.

// SIGINT and SIGTERM do not end the process on the spot, which could leave half a project
// behind: create() removes what it wrote, or stops the install, and reports it.
const interrupt = new AbortController()
let stoppedBy: NodeJS.Signals | undefined
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stoppedBy ??= signal
    interrupt.abort(signal)
  })
}

try {
  const args = parseArgs(process.argv.slice(2), process.env)
  if (args.help) process.stdout.write(usage)
  else if (args.version) process.stdout.write(`${version}\n`)
  else {
    await create(args, {
      cwd: process.cwd(),
      userAgent: process.env.npm_config_user_agent,
      interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY) && !process.env.CI,
      signal: interrupt.signal,
    })
  }
} catch (err) {
  const { code, message } = err as { code?: string, message: string }
  if (code?.startsWith('SPINDLE_CREATE_')) {
    p.cancel(`${code}: ${message}`)
    if (stoppedBy !== undefined) process.exitCode = 128 + constants.signals[stoppedBy]
    else process.exitCode = code === 'SPINDLE_CREATE_USAGE' ? 2 : 1
  } else {
    throw err
  }
}
