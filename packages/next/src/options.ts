import { existsSync, statSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { SPINDLE_NEXT_INVALID_OPTION, SPINDLE_NEXT_NO_BUILD } from './errors.ts'

export interface NextAdapterOptions {
  /** Folder of the Next.js app (where next.config and .next live). Relative paths resolve from process.cwd(). */
  dir: string
  /** Run Next's dev server (compiles on demand, HMR). Default false. */
  dev?: boolean
  /** Hide Next's own start-up messages. Default true. */
  quiet?: boolean
}

export interface ResolvedNextAdapterOptions {
  readonly dir: string
  readonly dev: boolean
  readonly quiet: boolean
}

const KNOWN = new Set(['dir', 'dev', 'quiet'])

function fail (message: string): never {
  throw new SPINDLE_NEXT_INVALID_OPTION(message)
}

/** Checks the options before Next starts; a production app must have been built. */
export function resolveNextOptions (input: NextAdapterOptions): ResolvedNextAdapterOptions {
  if (typeof input !== 'object' || input === null) fail('options must be an object with a `dir`')
  for (const key of Object.keys(input)) if (!KNOWN.has(key)) fail(`unknown option ${JSON.stringify(key)}`)
  if (typeof input.dir !== 'string' || input.dir.length === 0) fail(`dir must be the path of a Next.js app folder, got ${JSON.stringify(input.dir)}`)
  const dir = isAbsolute(input.dir) ? input.dir : resolve(input.dir)
  if (!existsSync(dir) || !statSync(dir).isDirectory()) fail(`dir must be an existing folder, got ${JSON.stringify(dir)}`)
  for (const name of ['dev', 'quiet'] as const) {
    if (input[name] !== undefined && typeof input[name] !== 'boolean') fail(`${name} must be a boolean, got ${JSON.stringify(input[name])}`)
  }
  const dev = input.dev ?? false
  if (!dev && !existsSync(join(dir, '.next', 'BUILD_ID'))) throw new SPINDLE_NEXT_NO_BUILD(dir)
  return Object.freeze({ dir, dev, quiet: input.quiet ?? true })
}
