// The Next.js example on Spindle with 2 workers, shedding on or off:
//   SHEDDING=on|off PORT=3100 node spindle.mjs
// SHED_OPTIONS='{"maxBacklog":50}' overrides shedding options (to compare thresholds);
// SERVE_OPTIONS='{"youngGenerationMb":32}' overrides other serve() options.
import { fileURLToPath } from 'node:url'
import { serve } from '@spindle/runtime'

const app = fileURLToPath(new URL('../../examples/next/app.js', import.meta.url))
await serve({
  ...JSON.parse(process.env.SERVE_OPTIONS ?? '{}'),
  app,
  workers: 2,
  port: Number(process.env.PORT),
  host: '127.0.0.1',
  controlPort: Number(process.env.CONTROL_PORT ?? 9391),
  shedding: process.env.SHEDDING === 'off' ? false : JSON.parse(process.env.SHED_OPTIONS ?? '{}'),
})
