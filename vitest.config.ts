import { defineConfig } from 'vitest/config'

// One config for the whole workspace: every package's tests run from the root.
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'examples/*/test/**/*.test.ts', 'bench/test/**/*.test.ts'],
    // Tests start real servers and real worker threads; on a 2-core machine running
    // files in parallel only adds noise and timeouts.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 240_000,
    pool: 'forks',
    reporters: ['default'],
  },
})
