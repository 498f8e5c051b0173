import type { PackageManager } from './args.ts'
import type { Template } from './templates.ts'

export interface ManifestInput {
  readonly name: string
  readonly template: Template
  readonly typescript: boolean
  readonly packageManager: PackageManager
  /** Range for the Spindle packages, e.g. ^0.1.0. */
  readonly spindleRange: string
  /** Spindle packages to install from tarballs instead (see packages-from.ts). */
  readonly tarballs: ReadonlyMap<string, string>
}

function sorted (deps: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(deps).sort(([a], [b]) => a.localeCompare(b)))
}

/** The generated project's package.json. */
export function manifest (input: ManifestInput): Record<string, unknown> {
  const { template, typescript, tarballs } = input
  const spindle = Object.fromEntries(template.spindle.map((pkg) => [pkg, tarballs.get(pkg) ?? input.spindleRange]))
  const devDependencies = sorted({ ...template.devDependencies, ...(typescript ? template.typescriptDevDependencies : {}) })
  const pkg: Record<string, unknown> = {
    name: input.name,
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=22.22.0' },
    scripts: { ...template.scripts, ...(typescript ? template.typescriptScripts : {}) },
    dependencies: sorted({ ...template.dependencies, ...spindle }),
  }
  if (Object.keys(devDependencies).length > 0) pkg.devDependencies = devDependencies
  if (tarballs.size > 0) {
    // The tarballs' own dependencies on each other name a version that is not published.
    const overrides = Object.fromEntries(tarballs)
    if (input.packageManager === 'pnpm') pkg.pnpm = { overrides }
    else pkg.overrides = overrides
  }
  return pkg
}
