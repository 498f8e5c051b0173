import { existsSync, readdirSync, statSync } from 'node:fs'
import { basename, resolve } from 'node:path'
import validateName from 'validate-npm-package-name'
import { SPINDLE_CREATE_DIR_NOT_EMPTY, SPINDLE_CREATE_INVALID_NAME } from './errors.ts'

export interface Target {
  /** Absolute folder the project is written to. */
  readonly root: string
  /** package.json name: the folder's own name. */
  readonly name: string
}

// A folder holding only these is still "empty": a fresh `git init` or a macOS folder.
const IGNORED = new Set(['.git', '.DS_Store'])

/** Why `name` cannot be a new npm package name, or undefined when it can. */
export function nameProblem (name: string): string | undefined {
  const result = validateName(name)
  if (result.validForNewPackages) return undefined
  return [...(result.errors ?? []), ...(result.warnings ?? [])].join('; ')
}

/** The folder for `dir` (relative to cwd; `.` is cwd itself), its package name checked, and its emptiness. */
export function resolveTarget (dir: string, cwd: string): Target {
  const root = resolve(cwd, dir)
  const name = basename(root)
  const problem = nameProblem(name)
  if (problem !== undefined) throw new SPINDLE_CREATE_INVALID_NAME(JSON.stringify(name), problem)
  if (existsSync(root)) {
    const used = !statSync(root).isDirectory() || readdirSync(root).some((entry) => !IGNORED.has(entry))
    if (used) throw new SPINDLE_CREATE_DIR_NOT_EMPTY(root)
  }
  return Object.freeze({ root, name })
}
