import { parseArgs as parseNodeArgs } from 'node:util'
import { SPINDLE_CREATE_USAGE } from './errors.ts'

export type PackageManager = 'npm' | 'pnpm'
export const packageManagers: readonly PackageManager[] = ['npm', 'pnpm']

/** What the command line says; anything left undefined is asked for (or defaulted with --yes). */
export interface CliArgs {
  readonly dir: string | undefined
  readonly template: string | undefined
  readonly typescript: boolean | undefined
  readonly packageManager: PackageManager | undefined
  readonly install: boolean | undefined
  readonly yes: boolean
  readonly packagesFrom: string | undefined
  readonly help: boolean
  readonly version: boolean
}

export const usage = `Usage: create-spindle [dir] [options]

Creates a Spindle app in [dir] (asked for when missing). Every question has a flag.

Options
  -t, --template <name>          next | react-router | fastify
      --typescript, --ts         TypeScript (the default)
      --no-typescript, --js      JavaScript
      --package-manager <pm>     npm | pnpm   default: the one running create-spindle
      --install / --no-install   install dependencies now (default: yes)
  -y, --yes                      take the default for every question not given by a flag
      --packages-from <dir>      install @spindle/* from the .tgz files in <dir>
                                 (env SPINDLE_CREATE_PACKAGES), e.g. for unreleased builds
  -h, --help                     this help
  -v, --version                  print the version

Examples
  npm create spindle@latest my-app
  pnpm create spindle my-app --template react-router --no-install
  npx create-spindle my-api --template fastify --js --package-manager npm --yes
`

/** Parses create-spindle's arguments; throws SPINDLE_CREATE_USAGE on anything it does not know. */
export function parseArgs (argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): CliArgs {
  let values, positionals, tokens
  try {
    ({ values, positionals, tokens } = parseNodeArgs({
      args: [...argv],
      allowPositionals: true,
      allowNegative: true,
      strict: true,
      tokens: true,
      options: {
        template: { type: 'string', short: 't' },
        typescript: { type: 'boolean' },
        ts: { type: 'boolean' },
        js: { type: 'boolean' },
        'package-manager': { type: 'string' },
        install: { type: 'boolean' },
        yes: { type: 'boolean', short: 'y' },
        'packages-from': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }))
  } catch (err) {
    throw new SPINDLE_CREATE_USAGE((err as Error).message)
  }
  if (positionals.length > 1) throw new SPINDLE_CREATE_USAGE(`Expected one folder name, got ${positionals.length}: ${positionals.join(' ')}`)
  if (positionals[0] === '') throw new SPINDLE_CREATE_USAGE('The folder name is empty (an unset variable?): name a folder, or "." for this one')
  // parseArgs keeps the last of `--install --no-install`: a script that says both means neither.
  const said = new Map<string, string>()
  for (const token of tokens) {
    if (token.kind !== 'option' || token.value !== undefined) continue
    const other = said.get(token.name)
    if (other !== undefined && other.startsWith('--no-') !== token.rawName.startsWith('--no-')) {
      throw new SPINDLE_CREATE_USAGE(`${other} and ${token.rawName} contradict each other`)
    }
    said.set(token.name, token.rawName)
  }

  const languages = [values.typescript, values.ts, values.js === undefined ? undefined : !values.js].filter((v) => v !== undefined)
  if (new Set(languages).size > 1) throw new SPINDLE_CREATE_USAGE('--typescript and --js contradict each other')

  const pm = values['package-manager']
  if (pm !== undefined && !packageManagers.includes(pm as PackageManager)) {
    throw new SPINDLE_CREATE_USAGE(`--package-manager must be one of ${packageManagers.join(', ')}, got ${JSON.stringify(pm)}`)
  }
  const packagesFrom = values['packages-from'] ?? (env.SPINDLE_CREATE_PACKAGES || undefined)
  if (values.template === '') throw new SPINDLE_CREATE_USAGE('--template needs a name')

  return Object.freeze({
    dir: positionals[0],
    template: values.template,
    typescript: languages[0],
    packageManager: pm as PackageManager | undefined,
    install: values.install,
    yes: values.yes ?? false,
    packagesFrom,
    help: values.help ?? false,
    version: values.version ?? false,
  })
}

/** The package manager that runs create-spindle (`npm create`, `pnpm create`), from npm_config_user_agent. */
export function detectPackageManager (userAgent: string | undefined): PackageManager {
  return userAgent?.startsWith('pnpm/') ? 'pnpm' : 'npm'
}
