import { defineConfig } from '@spindle/runtime'

// Workers default to the CPU limit (cgroup quota) or the cores; PORT, WORKERS and
// SPINDLE_CONTROL_HOST come from the environment (see the Dockerfile and k8s/).
export default defineConfig({
  app: './app.ts',
  shutdownTimeout: 10_000,
})
