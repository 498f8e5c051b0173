import { defineConfig } from '@spindle/runtime'
import { cacheControlRoutes, createSharedStore } from '@spindle/cache'

// Runs in the main thread only: the cache store is created once and handed to every
// worker, restarted ones included; its purge and stats routes join the control port
// (POST /cache/purge, GET /cache/stats on 9091).
const cache = createSharedStore({ maxBytes: 64 * 1024 * 1024 })

export default defineConfig({
  app: './app.ts',
  shared: { spindleCache: cache.buffer },
  controlRoutes: cacheControlRoutes(cache),
  shutdownTimeout: 10_000,
})
