import { readFileSync } from 'node:fs'
import * as p from '@clack/prompts'
import type { CliArgs } from './args.ts'
import { resolveChoices, type Choices } from './choices.ts'
import { installWithProgress } from './progress.ts'
import { nextSteps } from './next-steps.ts'
import { tarballSpecs } from './packages-from.ts'
import { scaffold } from './scaffold.ts'
import { writeAtomically } from './staging.ts'
import { resolveTarget } from './target.ts'

const own = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
export const version: string = own.version

/** Every Spindle package a tarball folder may hold, so their dependencies on each other resolve too. */
const spindlePackages = ['@spindle/options', '@spindle/runtime', '@spindle/cache', '@spindle/next', '@spindle/react-router']

export interface CreateContext {
  readonly cwd: string
  readonly userAgent: string | undefined
  /** Ask questions (a terminal is attached); otherwise flags and defaults decide. */
  readonly interactive: boolean
  /**
   * Aborted when the user stops the run (Ctrl-C): a question is cancelled, a project being
   * written is removed, an install is stopped (its project kept).
   */
  readonly signal?: AbortSignal
}

export interface Created {
  readonly root: string
  readonly choices: Choices
  readonly files: readonly string[]
}

/** Asks what is missing, writes the project, installs it, and prints the next steps. */
export async function create (args: CliArgs, context: CreateContext): Promise<Created> {
  const signal = context.signal ?? new AbortController().signal
  p.intro(`create-spindle ${version}`)
  const choices = await resolveChoices(args, context.userAgent, context.interactive, signal)
  const target = resolveTarget(choices.dir, context.cwd)
  const tarballs = args.packagesFrom === undefined
    ? new Map<string, string>()
    : tarballSpecs(args.packagesFrom, choices.template.spindle, spindlePackages)

  const input = {
    name: target.name,
    template: choices.template,
    typescript: choices.typescript,
    packageManager: choices.packageManager,
    spindleRange: `^${version}`,
    tarballs,
  }
  const files = await writeAtomically(target.root, signal, (dir) => scaffold(dir, input, signal))
  p.log.success(`Wrote ${files.length} files of the ${choices.template.label} template (${choices.typescript ? 'TypeScript' : 'JavaScript'}) to ${target.root}`)
  if (tarballs.size > 0) p.log.info(`Spindle packages from ${args.packagesFrom}: ${[...tarballs.keys()].join(', ')}`)

  if (choices.install) await installWithProgress(target.root, choices, context.interactive, signal)
  p.note(nextSteps(target.root, context.cwd, target.name, choices), 'Next steps')
  p.outro('Done')
  return { root: target.root, choices, files }
}
