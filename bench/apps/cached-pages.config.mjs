// spindle start config for the `cache` workload: one store for every worker.
import { defineConfig } from '@spindle/runtime'
import { cacheControlRoutes, createSharedStore } from '@spindle/cache'

const store = createSharedStore({ maxBytes: 64 * 1024 * 1024 })

export default defineConfig({
  app: './cached-pages.mjs',
  shared: { spindleCache: store.buffer },
  controlRoutes: cacheControlRoutes(store),
})
