// Runs `next build` only when the sources are newer than the last build.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const dir = fileURLToPath(new URL('.', import.meta.url))
const newest = (path) => {
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  return readdirSync(path).reduce((m, name) => Math.max(m, newest(join(path, name))), st.mtimeMs)
}
const buildId = join(dir, '.next', 'BUILD_ID')
const sources = Math.max(newest(join(dir, 'app')), newest(join(dir, 'public')), statSync(join(dir, 'next.config.mjs')).mtimeMs)
if (existsSync(buildId) && statSync(buildId).mtimeMs >= sources) {
  process.stderr.write('[spindle] examples/next: build is up to date\n')
} else {
  process.stderr.write('[spindle] examples/next: running next build (about 30 s)\n')
  const nextBin = createRequire(join(dir, 'package.json')).resolve('next/dist/bin/next')
  execFileSync(process.execPath, [nextBin, 'build'], { cwd: dir, stdio: 'inherit', env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' } })
}
