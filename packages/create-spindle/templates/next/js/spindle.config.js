import { defineConfig } from '@spindle/runtime'
import { cacheControlRoutes, createSharedStore } from '@spindle/cache'

// Runs in the main thread only. The store behind Next's caches (withSpindle in
// next.config.mjs) is created once and handed to every worker, restarted ones included;
// its purge and stats routes join the control port. Workers default to the CPU limit
// (cgroup quota) or the cores; PORT, WORKERS and SPINDLE_CONTROL_HOST come from the
// environment (see the Dockerfile and k8s/).
const cache = createSharedStore({ maxBytes: 128 * 1024 * 1024 })

export default defineConfig({
  app: './app.js',
  shared: { spindleCache: cache.buffer },
  controlRoutes: cacheControlRoutes(cache),
  shutdownTimeout: 10_000,
})
