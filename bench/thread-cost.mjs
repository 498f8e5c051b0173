// What a worker thread costs a plain Fastify app: examples/fastify's hello-world route in one
// process on its main thread, in one worker thread, and in one worker thread that first runs
// the runtime's nextTick warm-up (packages/runtime/src/tick-warmup.ts), as spindle start's
// workers do, and (--spindle) in `spindle start -w 1 --no-shedding` (the runtime's worker
// with its request tracking and metrics); rounds alternating, closed loop. Each row gives
// req/s and the server's CPU time (its process tree, user and system) per request.
//
//   node bench/thread-cost.mjs [--rounds 3] [--duration 5] [--connections 100] [--pin] [--spindle]
//
// --pin (Linux, taskset): the server on core 0, this process (the load generator) on core 1,
// so the two do not trade cores between rounds: steadier figures on a 2-core machine.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { startServer, treeCpuSeconds, waitPortFree } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'
import { benchArgs } from './lib/args.mjs'
import { roundOrder } from './lib/round-order.mjs'

const { values } = benchArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '100' },
    port: { type: 'string', default: '3994' },
    pin: { type: 'boolean', default: false },
    spindle: { type: 'boolean', default: false },
  },
})
if (values.pin) execFileSync('taskset', ['-a', '-pc', '1', String(process.pid)], { stdio: 'ignore' })
const pinned = (args) => values.pin ? { command: 'taskset', args: ['-c', '0', process.execPath, ...args] } : { command: process.execPath, args }
const port = Number(values.port)
const app = fileURLToPath(new URL('../examples/fastify/app.js', import.meta.url))
const script = (name) => fileURLToPath(new URL(`./apps/${name}`, import.meta.url))
const variants = {
  'main thread': { args: [script('fastify-single.mjs'), app], env: {} },
  'worker thread': { args: [script('fastify-in-worker.mjs'), app], env: {} },
  'worker thread, nextTick warmed': { args: [script('fastify-in-worker.mjs'), app], env: { WARM_TICKS: '1' } },
}
if (values.spindle) {
  const cli = fileURLToPath(new URL('../packages/runtime/bin/spindle.js', import.meta.url))
  variants['spindle start -w 1'] = { args: [cli, 'start', '-w', '1', '-p', String(port), '-H', '127.0.0.1', '--no-control', '--no-shedding', app], env: {} }
}
const url = `http://127.0.0.1:${port}/`
const out = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
const cpuPerRequest = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const [name, v] of roundOrder(Object.entries(variants), round)) {
    await waitPortFree(port)
    const server = await startServer({ ...pinned(v.args), cwd: fileURLToPath(new URL('.', import.meta.url)), env: { ...v.env, PORT: String(port), HOST: '127.0.0.1' }, readyUrl: url })
    try {
      await closedLoop({ url, connections: Number(values.connections), duration: 2 })
      const cpu = treeCpuSeconds(server.pid)
      const r = await closedLoop({ url, connections: Number(values.connections), duration: Number(values.duration) })
      const us = ((treeCpuSeconds(server.pid) - cpu) * 1e6) / (r.rps * Number(values.duration))
      out[name].push(r.rps)
      cpuPerRequest[name].push(us)
      process.stderr.write(`round ${round} ${name}: ${Math.round(r.rps)} req/s, ${us.toFixed(1)} µs of CPU per request\n`)
    } finally {
      await server.stop()
    }
  }
}
const base = median(out['main thread'])
process.stdout.write(`hello-world, ${values.connections} connections, ${values.rounds} alternating rounds of ${values.duration} s, medians${values.pin ? ', server and load generator pinned to a core each' : ''}\n\n| where the app runs | req/s | × main thread | server CPU µs per request |\n|---|---|---|---|\n`)
for (const [name, list] of Object.entries(out)) process.stdout.write(`| ${name} | ${Math.round(median(list))} | ${(median(list) / base).toFixed(3)} | ${median(cpuPerRequest[name]).toFixed(1)} |\n`)
