// Next.js keeps ISR pages, 'use cache' entries and the fetch cache in the memory of the
// thread that rendered them. Where the adapter's pages render on more than one thread, a
// revalidatePath or revalidateTag reaches only the thread that ran it unless the build
// uses shared cache handlers (withSpindle, or the app's own): say so once, at start.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { workerInfo } from '@spindle/runtime/worker'

export const PER_THREAD_CACHE_WARNING = 'SPINDLE_NEXT_CACHE_PER_THREAD'

/** Whether the build in `dir` was made with a cacheHandler of its own (withSpindle's or another). */
function hasCacheHandler (dir: string): boolean {
  const file = join(dir, '.next', 'required-server-files.json')
  if (!existsSync(file)) return false
  const config = (JSON.parse(readFileSync(file, 'utf8')) as { config?: { cacheHandler?: unknown } }).config
  return typeof config?.cacheHandler === 'string'
}

/**
 * Emits a process warning when pages render on several threads (pool threads, or the
 * second of several `spindle start` workers, so that one worker says it) over Next's
 * per-thread caches.
 */
export function warnIfCachePerThread (dir: string, threads: number): void {
  const worker = workerInfo()
  const several = threads > 1 || (worker?.id === 2 && worker.generation === 1)
  if (!several || hasCacheHandler(dir)) return
  process.emitWarning(
    'Next.js keeps its caches (ISR pages, \'use cache\', fetch) in the memory of each thread: ' +
    'a revalidatePath or revalidateTag reaches only the thread that ran it. ' +
    'Wrap next.config with withSpindle() from @spindle/next to share one cache (docs/next-caching.md).',
    { code: PER_THREAD_CACHE_WARNING },
  )
}
