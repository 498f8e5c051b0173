import { randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, renameSync, rmdirSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { SPINDLE_CREATE_INTERRUPTED, SPINDLE_CREATE_WRITE_FAILED } from './errors.ts'

function isSystemError (err: unknown): err is NodeJS.ErrnoException {
  return typeof (err as NodeJS.ErrnoException | undefined)?.syscall === 'string'
}

/** Removes `paths` (newest first); says what is left behind when one cannot be removed. */
function removeAll (paths: readonly string[]): string {
  const left: string[] = []
  for (const path of paths) {
    try {
      rmSync(path, { recursive: true, force: true })
    } catch (err) {
      left.push(`${path} (${(err as Error).message})`)
    }
  }
  if (paths.length === 0) return 'nothing was written'
  return left.length === 0 ? 'what was written is removed' : `could not remove ${left.join(', ')}`
}

/** A new folder `prefix<random>`, with the mode a plain mkdir gives (mkdtemp's is 0700). */
function makeStagingDir (prefix: string): string {
  const dir = prefix + randomUUID().slice(0, 8)
  mkdirSync(dir)
  return dir
}

/**
 * Runs `write` on a hidden staging folder and moves its result to `root` only once it is
 * complete, so that `root` never holds half a project, which would also make a second run
 * refuse the folder as not empty. A new `root` is the staging folder, renamed. A `root` that
 * exists (empty, or holding only .git) is kept as it is: the staging folder goes inside it,
 * on the same filesystem even when `root` is a mount point, and its entries are moved out.
 * When `write` fails or `signal` aborts (Ctrl-C), everything this run created is removed
 * and the error says so: SPINDLE_CREATE_INTERRUPTED or, for a filesystem error,
 * SPINDLE_CREATE_WRITE_FAILED.
 */
export async function writeAtomically<T> (root: string, signal: AbortSignal, write: (dir: string) => Promise<T>): Promise<T> {
  // What this run created, newest first: removed again when it does not complete.
  const created: string[] = []
  try {
    signal.throwIfAborted()
    const exists = statSync(root, { throwIfNoEntry: false }) !== undefined
    let staging: string
    if (exists) {
      staging = makeStagingDir(join(root, '.create-spindle-'))
    } else {
      const firstNew = mkdirSync(dirname(root), { recursive: true })
      if (firstNew !== undefined) created.unshift(firstNew)
      staging = makeStagingDir(join(dirname(root), `.${basename(root)}-`))
    }
    created.unshift(staging)
    const result = await write(staging)
    signal.throwIfAborted()
    // From here on no await: a signal's handler cannot run until the project is in place.
    if (exists) {
      for (const entry of readdirSync(staging)) {
        renameSync(join(staging, entry), join(root, entry))
        created.unshift(join(root, entry))
      }
      rmdirSync(staging)
    } else {
      renameSync(staging, root)
    }
    return result
  } catch (err) {
    const aftermath = removeAll(created)
    if (signal.aborted) throw new SPINDLE_CREATE_INTERRUPTED(aftermath)
    if (isSystemError(err)) throw new SPINDLE_CREATE_WRITE_FAILED(root, err.message, aftermath)
    throw err
  }
}
