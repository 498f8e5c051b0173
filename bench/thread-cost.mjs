// What a worker thread costs a plain Fastify app: examples/fastify's hello-world route in one
// process on its main thread, in one worker thread, and in one worker thread with the young
// generation the runtime gives its workers (48 MB); rounds alternating, closed loop.
//
//   node bench/thread-cost.mjs [--rounds 3] [--duration 5] [--connections 100]
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { startServer, waitPortFree } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'
import { benchArgs } from './lib/args.mjs'

const { values } = benchArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '100' },
    port: { type: 'string', default: '3994' },
  },
})
const port = Number(values.port)
const app = fileURLToPath(new URL('../examples/fastify/app.js', import.meta.url))
const script = (name) => fileURLToPath(new URL(`./apps/${name}`, import.meta.url))
const variants = {
  'main thread': { args: [script('fastify-single.mjs'), app], env: {} },
  'worker thread': { args: [script('fastify-in-worker.mjs'), app], env: {} },
  'worker thread, 48 MB young generation': { args: [script('fastify-in-worker.mjs'), app], env: { YOUNG_MB: '48' } },
}
const url = `http://127.0.0.1:${port}/`
const out = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const [name, v] of Object.entries(variants)) {
    await waitPortFree(port)
    const server = await startServer({ command: process.execPath, args: v.args, cwd: fileURLToPath(new URL('.', import.meta.url)), env: { ...v.env, PORT: String(port), HOST: '127.0.0.1' }, readyUrl: url })
    try {
      await closedLoop({ url, connections: Number(values.connections), duration: 2 })
      const r = await closedLoop({ url, connections: Number(values.connections), duration: Number(values.duration) })
      out[name].push(r.rps)
      process.stderr.write(`round ${round} ${name}: ${Math.round(r.rps)} req/s\n`)
    } finally {
      await server.stop()
    }
  }
}
const base = median(out['main thread'])
process.stdout.write(`hello-world, ${values.connections} connections, ${values.rounds} alternating rounds of ${values.duration} s, medians\n\n| where the app runs | req/s | × main thread |\n|---|---|---|\n`)
for (const [name, list] of Object.entries(out)) process.stdout.write(`| ${name} | ${Math.round(median(list))} | ${(median(list) / base).toFixed(3)} |\n`)
