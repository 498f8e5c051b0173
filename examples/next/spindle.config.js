import { defineConfig } from '@spindle/runtime'

// With SPINDLE_CACHE_URL=redis://host:6379/0 (or `cache: { url }` here) every process
// shares one cache through Redis/Valkey behind its shared memory (docs/fleet.md).
export default defineConfig({
  app: './app.js',
  shutdownTimeout: 10_000,
})
