import { readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { SPINDLE_CREATE_PACKAGES_NOT_FOUND } from './errors.ts'

// `npm pack` and `pnpm pack` name a tarball <scope>-<name>-<version>.tgz without the `@`,
// e.g. spindle-runtime-0.1.0.tgz for @spindle/runtime.
function tarballPrefix (pkg: string): string {
  return pkg.replace(/^@/, '').replace('/', '-') + '-'
}

/**
 * For each Spindle package, the `file:` spec of its tarball in `dir`: how an unreleased
 * build is installed. Every .tgz of the folder is mapped (an app's dependency may depend on
 * another Spindle package), and each of `needed` must be there.
 */
export function tarballSpecs (dir: string, needed: readonly string[], known: readonly string[]): Map<string, string> {
  const folder = resolve(dir)
  let files: string[]
  try {
    files = readdirSync(folder).filter((f) => f.endsWith('.tgz'))
  } catch {
    files = []
  }
  const specs = new Map<string, string>()
  for (const pkg of new Set([...needed, ...known])) {
    const prefix = tarballPrefix(pkg)
    const file = files.find((f) => f.startsWith(prefix) && /^\d/.test(f.slice(prefix.length)))
    if (file !== undefined) specs.set(pkg, `file:${join(folder, file)}`)
    else if (needed.includes(pkg)) throw new SPINDLE_CREATE_PACKAGES_NOT_FOUND(pkg, folder)
  }
  return specs
}
