import { defineConfig } from '@spindle/runtime'

export default defineConfig({
  app: './app.js',
  // workers, port and host come from the defaults, flags or WORKERS / PORT / HOST.
  shutdownTimeout: 10_000,
})
