import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { run } from './processes.ts'

const packagesDir = fileURLToPath(new URL('../../../', import.meta.url))

/** `pnpm pack` of every Spindle package (their dist must be built) into a new folder. */
export async function packSpindle (): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'spindle-tarballs-'))
  for (const pkg of ['options', 'runtime', 'cache', 'next', 'react-router']) {
    await run('pnpm', ['pack', '--pack-destination', dir], join(packagesDir, pkg))
  }
  return dir
}
