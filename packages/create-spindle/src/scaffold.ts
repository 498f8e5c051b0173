import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { commandsFor } from './package-manager.ts'
import { manifest, type ManifestInput } from './package-json.ts'

export const templatesDir = fileURLToPath(new URL('../templates/', import.meta.url))

// The only placeholders template files may hold; anything else in {{ }} (JSX style objects)
// is left alone.
const TOKEN = /\{\{(name|run|install|lockfile|ciInstall|pruneDev|ext)\}\}/g

function filesUnder (dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((entry) => statSync(join(dir, entry)).isFile())
}

/**
 * Writes the project: the files every template has (common/: Dockerfile, k8s/), the
 * template's shared files, then its ts/ or js/ files (a later file replaces an earlier
 * one of the same path), with the
 * placeholders filled in, and its package.json. Returns the files written (relative paths).
 */
export function scaffold (root: string, input: ManifestInput): string[] {
  const { template, typescript, packageManager } = input
  const commands = commandsFor(packageManager)
  const values: Record<string, string> = { ...commands, name: input.name, ext: typescript ? 'ts' : 'js' }
  const written = new Set<string>()
  mkdirSync(root, { recursive: true })
  for (const part of ['common', `${template.id}/shared`, `${template.id}/${typescript ? 'ts' : 'js'}`]) {
    const from = join(templatesDir, part)
    if (!existsSync(from)) continue
    for (const file of filesUnder(from)) {
      // npm drops .gitignore from published packages, so dotfiles are stored as _name.
      const target = join(root, file.replace(/(^|\/)_(?=[^/]+$)/, '$1.'))
      mkdirSync(dirname(target), { recursive: true })
      cpSync(join(from, file), target)
      const text = readFileSync(target, 'utf8')
      const filled = text.replace(TOKEN, (_, key: string) => values[key]!)
      if (filled !== text) writeFileSync(target, filled)
      written.add(relative(root, target))
    }
  }
  writeFileSync(join(root, 'package.json'), JSON.stringify(manifest(input), null, 2) + '\n')
  written.add('package.json')
  return [...written].sort()
}
