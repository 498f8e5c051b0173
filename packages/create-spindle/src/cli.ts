import * as p from '@clack/prompts'
import { parseArgs, usage } from './args.ts'
import { create, version } from './create.ts'

// The create-spindle command: exit 0 on success, 2 on a usage error, 1 on any other error.
try {
  const args = parseArgs(process.argv.slice(2), process.env)
  if (args.help) process.stdout.write(usage)
  else if (args.version) process.stdout.write(`${version}\n`)
  else {
    await create(args, {
      cwd: process.cwd(),
      userAgent: process.env.npm_config_user_agent,
      interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY) && !process.env.CI,
    })
  }
} catch (err) {
  const { code, message } = err as { code?: string, message: string }
  if (code?.startsWith('SPINDLE_CREATE_')) {
    p.cancel(`${code}: ${message}`)
    process.exitCode = code === 'SPINDLE_CREATE_USAGE' ? 2 : 1
  } else {
    throw err
  }
}
