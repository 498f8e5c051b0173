import { lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs'
import { basename, resolve } from 'node:path'
import validateName from 'validate-npm-package-name'
import { SPINDLE_CREATE_DIR_NOT_EMPTY, SPINDLE_CREATE_INVALID_NAME, SPINDLE_CREATE_WRITE_FAILED } from './errors.ts'

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

/**
 * Whether `root` holds something already: a file, or a folder with more than IGNORED. A
 * path that cannot be a folder (under a file, a symbolic link to nothing, no permission)
 * is refused here, before anything is written.
 */
function isUsed (root: string): boolean {
  try {
    return !statSync(root).isDirectory() || readdirSync(root).some((entry) => !IGNORED.has(entry))
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException
    const link = code === 'ENOENT' ? lstatSync(root, { throwIfNoEntry: false }) : undefined
    if (code === 'ENOENT' && link === undefined) return false
    const reason = link === undefined ? message : `ENOENT: a symbolic link to ${readlinkSync(root)}, which does not exist`
    throw new SPINDLE_CREATE_WRITE_FAILED(root, reason, 'nothing was written')
  }
}

/** The folder for `dir` (relative to cwd; `.` is cwd itself), its package name checked, and its emptiness. */
export function resolveTarget (dir: string, cwd: string): Target {
  const root = resolve(cwd, dir)
  const name = basename(root)
  const problem = nameProblem(name)
  if (problem !== undefined) throw new SPINDLE_CREATE_INVALID_NAME(JSON.stringify(name), problem)
  if (isUsed(root)) throw new SPINDLE_CREATE_DIR_NOT_EMPTY(root)
  return Object.freeze({ root, name })
}
