import { existsSync, readdirSync, statSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { kubernetesName } from './kubernetes-name.ts'
import { commandsFor } from './package-manager.ts'
import { manifest, type ManifestInput } from './package-json.ts'

export const templatesDir = fileURLToPath(new URL('../templates/', import.meta.url))

// The only placeholders template files may hold; anything else in {{ }} (JSX style objects)
// is left alone. {{name}} is the npm name, {{k8sName}} the name in Docker and Kubernetes.
const TOKEN = /\{\{(name|k8sName|run|install|lockfile|ciInstall|pruneDev|ext)\}\}/g

function filesUnder (dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((entry) => statSync(join(dir, entry)).isFile())
}

/**
 * Writes the project into `dir`: the files every template has (common/: Dockerfile, k8s/),
 * the template's shared files, then its ts/ or js/ files (a later file replaces an earlier
 * one of the same path), with the placeholders filled in, and its package.json. Returns
 * the files written (relative paths). Stops with `signal.reason` once `signal` aborts;
 * the caller removes what was written (see staging.ts).
 */
export async function scaffold (dir: string, input: ManifestInput, signal?: AbortSignal): Promise<string[]> {
  const { template, typescript, packageManager } = input
  const commands = commandsFor(packageManager)
  const values: Record<string, string> = { ...commands, name: input.name, k8sName: kubernetesName(input.name), ext: typescript ? 'ts' : 'js' }
  const written = new Set<string>()
  for (const part of ['common', `${template.id}/shared`, `${template.id}/${typescript ? 'ts' : 'js'}`]) {
    const from = join(templatesDir, part)
    if (!existsSync(from)) continue
    for (const file of filesUnder(from)) {
      signal?.throwIfAborted()
      // npm drops .gitignore from published packages, so dotfiles are stored as _name.
      const target = join(dir, file.replace(/(^|\/)_(?=[^/]+$)/, '$1.'))
      const content = await readFile(join(from, file))
      const text = content.toString('utf8')
      const filled = text.replace(TOKEN, (_, key: string) => values[key]!)
      await mkdir(dirname(target), { recursive: true })
      await writeFile(target, filled === text ? content : filled)
      written.add(relative(dir, target))
    }
  }
  signal?.throwIfAborted()
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest(input), null, 2) + '\n')
  written.add('package.json')
  return [...written].sort()
}
