import * as p from '@clack/prompts'
import { detectPackageManager, packageManagers, type CliArgs, type PackageManager } from './args.ts'
import { SPINDLE_CREATE_CANCELLED, SPINDLE_CREATE_UNKNOWN_TEMPLATE } from './errors.ts'
import { nameProblem } from './target.ts'
import { findTemplate, templateIds, templates, type Template } from './templates.ts'

export interface Choices {
  readonly dir: string
  readonly template: Template
  readonly typescript: boolean
  readonly packageManager: PackageManager
  readonly install: boolean
}

export const defaultDir = 'spindle-app'

function answered<T> (value: T): Exclude<T, symbol> {
  if (typeof value === 'symbol') throw new SPINDLE_CREATE_CANCELLED()
  return value as Exclude<T, symbol>
}

/**
 * Fills in what the flags left open: the defaults with --yes or without a terminal to ask
 * on (CI), a question each otherwise. An abort of `signal` cancels the open question.
 */
export async function resolveChoices (args: CliArgs, userAgent: string | undefined, interactive: boolean, signal?: AbortSignal): Promise<Choices> {
  if (args.template !== undefined && findTemplate(args.template) === undefined) {
    throw new SPINDLE_CREATE_UNKNOWN_TEMPLATE(JSON.stringify(args.template), templateIds.join(', '))
  }
  const ask = interactive && !args.yes
  const dir = args.dir ?? (ask
    ? answered(await p.text({
      message: 'Where should the project go?',
      placeholder: defaultDir,
      defaultValue: defaultDir,
      validate: (value) => value && nameProblem(value.split('/').at(-1) ?? value),
      signal,
    }))
    : defaultDir)
  const templateId = args.template ?? (ask
    ? answered(await p.select({
      message: 'Which template?',
      options: templates.map((t) => ({ value: t.id, label: t.label, hint: t.hint })),
      signal,
    }))
    : 'next')
  const typescript = args.typescript ?? (ask
    ? answered(await p.confirm({ message: 'Use TypeScript?', initialValue: true, signal }))
    : true)
  const detected = detectPackageManager(userAgent)
  const packageManager = args.packageManager ?? (ask
    ? answered(await p.select({
      message: 'Which package manager?',
      initialValue: detected,
      options: packageManagers.map((pm) => ({ value: pm, label: pm })),
      signal,
    }))
    : detected)
  const install = args.install ?? (ask
    ? answered(await p.confirm({ message: `Install dependencies now with ${packageManager}?`, initialValue: true, signal }))
    : true)
  return Object.freeze({ dir, template: findTemplate(templateId)!, typescript, packageManager, install })
}
