// Where a configuration's CPU goes, thread by thread, at capacity: starts it, runs the
// closed loop, and reads every thread's CPU time (/proc/<pid>/task/*/stat, Linux) over the
// measured window, grouped by the thread's name. For pool mode it answers what share of the
// CPU the Fastify thread (the one that owns the port) takes beside the render threads. User
// and system time are shown apart: system time is mostly the sockets (on 127.0.0.1 a write
// also runs the receiving side of TCP).
//
//   node bench/thread-cpu.mjs [--workload react-router] [--config spindle-pool] [--workers 2] [--duration 10] [--warmup 5]
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { closedLoop } from './lib/closed-loop.mjs'
import { startServer, waitPortFree } from './lib/processes.mjs'
import { workloads } from './lib/workloads.mjs'
import { benchArgs } from './lib/args.mjs'

const { values } = benchArgs({
  options: {
    workload: { type: 'string', default: 'react-router' },
    config: { type: 'string', default: 'spindle-pool' },
    workers: { type: 'string', default: '2' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '100' },
    port: { type: 'string', default: '3993' },
  },
})
const TICK = 100 // USER_HZ on Linux
const port = Number(values.port)
const wl = workloads[values.workload]
const launch = wl.launch(values.config, { workers: Number(values.workers), port, workDir: fileURLToPath(new URL('./.work', import.meta.url)) })
if (launch.unavailable) throw new Error(launch.unavailable)

/** CPU seconds of every thread of `pid`, by thread id, with its name. */
function threads (pid) {
  const out = new Map()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(tid, { name, user: Number(fields[11]) / TICK, system: Number(fields[12]) / TICK })
    } catch { /* the thread ended */ }
  }
  return out
}

await waitPortFree(port)
const server = await startServer({ ...launch, readyUrl: `http://127.0.0.1:${port}${wl.path}`, headers: wl.headers })
try {
  // Warmed with the measured load: a framework's code needs seconds of it before it is
  // compiled, and a 100-connection warm-up only fills the pool's queue.
  await closedLoop({ url: `http://127.0.0.1:${port}${wl.path}`, connections: Number(values.connections), duration: Number(values.warmup), headers: wl.headers })
  const before = threads(server.pid)
  const result = await closedLoop({ url: `http://127.0.0.1:${port}${wl.path}`, connections: Number(values.connections), duration: Number(values.duration), headers: wl.headers })
  const after = threads(server.pid)
  const byName = new Map()
  for (const [tid, t] of after) {
    const was = before.get(tid) ?? { user: 0, system: 0 }
    const sum = byName.get(t.name) ?? { user: 0, system: 0 }
    byName.set(t.name, { user: sum.user + t.user - was.user, system: sum.system + t.system - was.system })
  }
  const seconds = Number(values.duration)
  const total = [...byName.values()].reduce((a, b) => a + b.user + b.system, 0)
  console.log(`${values.workload} / ${values.config}, ${values.workers} threads: ${result.rps.toFixed(0)} req/s, ${(total / seconds).toFixed(2)} cores in all`)
  const perRequest = (cpuSeconds) => (1e6 * cpuSeconds / result.ok).toFixed(0)
  for (const [name, { user, system }] of [...byName].sort((a, b) => (b[1].user + b[1].system) - (a[1].user + a[1].system))) {
    const cpu = user + system
    if (cpu / seconds < 0.005) continue
    console.log(`  ${name.padEnd(18)} ${(cpu / seconds).toFixed(2)} cores  ${(100 * cpu / total).toFixed(0)} %  ${perRequest(cpu)} µs/request (user ${perRequest(user)}, system ${perRequest(system)})`)
  }
} finally {
  await server.stop()
}
