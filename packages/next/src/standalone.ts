import { existsSync, readFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { SPINDLE_NEXT_STANDALONE_NO_STATIC } from './errors.ts'

/** What `next build` records in `.next/required-server-files.json`; only the parts read here. */
interface RequiredServerFiles {
  config?: {
    output?: string
    assetPrefix?: string
    distDir?: string
    cacheHandler?: string
    cacheHandlers?: Record<string, string | undefined>
  }
}

/**
 * The configuration of an `output: 'standalone'` build, or undefined for any other build.
 *
 * A standalone tree has no next.config: Next's own `server.js` hands Next the configuration
 * it serialised at build time (the `config` of `required-server-files.json`, the same object)
 * through `__NEXT_PRIVATE_STANDALONE_CONFIG`, then calls `process.chdir()`, which worker
 * threads refuse. The adapter reads that file instead and passes `dir` explicitly, so no
 * change of directory is needed.
 */
export function readStandaloneConfig (dir: string): Record<string, unknown> | undefined {
  const file = join(dir, '.next', 'required-server-files.json')
  if (!existsSync(file)) return undefined
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as RequiredServerFiles
  const config = manifest.config
  if (config?.output !== 'standalone') return undefined
  // `next build` leaves the browser's chunks out of the standalone tree. Without them every
  // page would render but never hydrate, so a tree they were not copied into is refused,
  // unless the chunks are served from elsewhere (assetPrefix).
  if (!config.assetPrefix && !existsSync(join(dir, '.next', 'static'))) throw new SPINDLE_NEXT_STANDALONE_NO_STATIC(dir)
  // The build records cache handler paths relative to the build folder, and Next's route
  // modules resolve some of them from the working directory, which server.js moves into
  // the app; anchoring them on `dir` serves the same files without moving it.
  const distDir = resolve(dir, config.distDir ?? '.next')
  const anchor = (path: string | undefined): string | undefined => path === undefined || isAbsolute(path) || path.startsWith('file:') ? path : resolve(distDir, path)
  const handlers = config.cacheHandlers && Object.fromEntries(Object.entries(config.cacheHandlers).map(([kind, path]) => [kind, anchor(path)]))
  return { ...config, cacheHandler: anchor(config.cacheHandler), cacheHandlers: handlers }
}

const ENV = '__NEXT_PRIVATE_STANDALONE_CONFIG'

/**
 * Runs `start` (Next's prepare, which loads the configuration once and caches it for the
 * thread) with the standalone configuration in place of a next.config file, then restores
 * the thread's environment so another Next app in the same thread loads its own config.
 */
export async function withStandaloneConfig<T> (config: Record<string, unknown> | undefined, start: () => Promise<T>): Promise<T> {
  if (config === undefined) return start()
  const before = process.env[ENV]
  process.env[ENV] = JSON.stringify(config)
  try {
    return await start()
  } finally {
    if (before === undefined) delete process.env[ENV]
    else process.env[ENV] = before
  }
}
