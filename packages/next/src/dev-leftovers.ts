// Next's dev server leaves two things running after its custom server's close(): `next dev`
// never needs them closed, as it ends its process (process.exit) once closed. In a Spindle
// worker thread, which ends only when its event loop empties, they kept the thread alive
// until shutdownTimeout terminated it, so every stop of `spindle dev` took the full timeout:
// - the Watchpack of Next's route and config watcher (server/lib/router-utils/setup-dev-bundler.js),
//   whose fs.watch handles nothing closes and nothing outside it can reach;
// - the Cache Components validation worker thread (server/dev/dev-validation-worker-pool.js),
//   spawned at the first page it validates, which has its own teardown, dropDevValidationWorker.
// Both are Next's internals, not its API: a Next without them is left as it is. With them
// closed a Webpack dev server lets the thread end at once; Turbopack's native subscriptions
// (route and HMR events, disposed only when Next's own iterators end) still hold it, and
// nothing reaches them: in a Spindle worker the thread then ends itself (EXIT_GRACE_MS).
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { isSpindleWorker } from '@spindle/runtime/worker'

/**
 * ms a Spindle worker thread waits, once Next has closed, for its loop to empty before it
 * exits: time for the runtime to report the drain, which it does as soon as Fastify closed.
 */
const EXIT_GRACE_MS = 500

interface Watchpack { watch (...args: unknown[]): unknown, close (): void }
type WatchpackClass = (new (...args: unknown[]) => Watchpack) & { prototype: Watchpack }

const kTracked = Symbol.for('@spindle/next.watchpack-tracked')
/** The Watchpacks watching each app folder: filled by Watchpack#watch once patched. */
const watching = new Map<string, Set<Watchpack>>()

/** The folders one watch() call names: `watch({ directories })`, or Watchpack 1's `watch(files, directories, startTime)`. */
function watchedDirectories (args: unknown[]): unknown[] {
  if (Array.isArray(args[0])) return Array.isArray(args[1]) ? args[1] : []
  const directories = (args[0] as { directories?: unknown } | undefined)?.directories
  return directories && typeof directories === 'object' && Symbol.iterator in directories ? [...(directories as Iterable<unknown>)] : []
}

function trackWatchpack (Watchpack: WatchpackClass): void {
  const proto = Watchpack.prototype as Watchpack & { [kTracked]?: true }
  if (proto[kTracked]) return
  const watch = proto.watch
  proto.watch = function (this: Watchpack, ...args: unknown[]) {
    for (const directory of watchedDirectories(args)) {
      if (typeof directory === 'string') watching.get(resolve(directory))?.add(this)
    }
    return watch.apply(this, args)
  }
  proto[kTracked] = true
}

/**
 * Starts keeping the Watchpacks Next's dev server creates for the app in `dir` (call it
 * before prepare()); close() closes them and Next's validation worker once Next has closed.
 */
export function trackDevLeftovers (dir: string): { close (): Promise<void> } {
  const requireNext = createRequire(join(dir, 'package.json'))
  const key = resolve(dir)
  const mine = new Set<Watchpack>()
  try {
    trackWatchpack(requireNext('next/dist/compiled/watchpack') as WatchpackClass)
    watching.set(key, mine)
  } catch {
    // A Next without its compiled Watchpack: nothing to track.
  }
  return {
    async close () {
      if (watching.get(key) === mine) watching.delete(key)
      for (const wp of mine) {
        try { wp.close() } catch { /* already closed */ }
      }
      mine.clear()
      try {
        const pool = requireNext('next/dist/server/dev/dev-validation-worker-pool.js') as { dropDevValidationWorker?: () => void }
        // Ends the worker thread, if one was spawned; a later dev server spawns its own.
        pool.dropDevValidationWorker?.()
      } catch {
        // A Next without the validation worker.
      }
      // Unreferenced: a thread whose loop empties ends at once, as it should; only one held
      // by what is left goes, instead of waiting for shutdownTimeout to terminate it. Only in
      // a Spindle worker thread, which ends once closed: never the user's own process.
      if (isSpindleWorker()) setTimeout(() => { process.exit(0) }, EXIT_GRACE_MS).unref()
    },
  }
}
