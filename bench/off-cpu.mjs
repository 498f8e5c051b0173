// Where a configuration's threads wait while they have work: under a closed loop of 100
// connections, how much of the machine stays idle, and what each of the server's threads was
// blocked on each time a core went idle after it. Needs root and `perf` (linux-perf): the
// kernel's sched_switch tracepoint is recorded system-wide with kernel stacks.
//   node bench/off-cpu.mjs [--workload next] [--configs spindle,cluster] [--rounds 2] [--seconds 3]
//     [--spindle-args=--no-parallel-scavenge]   flags added to `spindle start` (config spindle+ runs
//                                               Spindle with them, beside plain spindle)
// Per configuration and round: req/s, the cores the server and the machine's idle task used,
// and the server's switches to an idle core by cause:
//   mm-lock  the process's memory-map lock (mmap, munmap, madvise, mprotect, a page fault):
//            one lock per process, so threads of one process queue on it and processes do not
//   futex    another thread of the process (a garbage-collection join, a mutex)
//   poll     the event loop waiting for I/O (no request ready)
import { execFileSync, spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { benchArgs, wholeArg } from './lib/args.mjs'
import { closedLoop } from './lib/closed-loop.mjs'
import { processTree, startServer, treeCpuSeconds, waitPortFree } from './lib/processes.mjs'
import { workloads } from './lib/workloads.mjs'

const { values } = benchArgs({
  options: {
    workload: { type: 'string', default: 'next' },
    configs: { type: 'string', default: 'spindle,cluster' },
    rounds: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '3' },
    'spindle-args': { type: 'string', default: '' },
  },
})
const rounds = wholeArg(values, 'rounds', 1)
const seconds = wholeArg(values, 'seconds', 1)
const workload = workloads[values.workload]
if (!workload) throw new Error(`--workload must be one of ${Object.keys(workloads).join(', ')}`)
const why = workload.prepare()
if (why) throw new Error(why)
try { execFileSync('perf', ['--version'], { stdio: 'ignore' }) } catch {
  console.error('perf is not installed (apt-get install linux-perf); it is needed to see why threads wait')
  process.exit(2)
}

const port = 3994
const url = `http://127.0.0.1:${port}${workload.path}`
const data = join(tmpdir(), `spindle-off-cpu-${process.pid}.data`)

/** Idle and total jiffies of the whole machine. */
function machineTicks () {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  return { idle: f[3] + f[4], all: f.reduce((a, b) => a + b, 0) }
}

const CAUSES = [
  ['mm-lock', /rwsem_down_(write|read)_slowpath/],
  ['futex', /futex_/],
  ['poll', /ep_poll|do_epoll_wait|io_uring/],
]

/** The server's switches to the idle task in `perf script` output, by cause. */
function idleSwitches (script, pids) {
  const counts = Object.fromEntries([...CAUSES.map(([name]) => name), 'other'].map((k) => [k, 0]))
  for (const event of script.split('\n\n')) {
    const head = event.slice(0, event.indexOf('\n'))
    if (!head.includes('next_comm=swapper')) continue
    const pid = /prev_pid=(\d+)/.exec(head)?.[1]
    if (pid === undefined || !pids.has(Number(pid))) continue
    const cause = CAUSES.find(([, pattern]) => pattern.test(event))
    counts[cause ? cause[0] : 'other']++
  }
  return counts
}

function threadIds (root) {
  const ids = new Set()
  for (const pid of processTree(root)) {
    try { for (const tid of readdirSync(`/proc/${pid}/task`)) ids.add(Number(tid)) } catch { /* gone */ }
  }
  return ids
}

console.log(`${values.workload}, 2 workers, closed loop of 100 connections; perf sched_switch for ${seconds} s per round`)
try {
  for (let round = 1; round <= rounds; round++) {
    for (const config of values.configs.split(',')) {
      const job = workload.launch(config === 'spindle+' ? 'spindle' : config, { workers: 2, port })
      if (config === 'spindle+') job.args = [...job.args, ...values['spindle-args'].split(' ').filter(Boolean)]
      if (job.unavailable) { console.log(`${config}: ${job.unavailable}`); continue }
      await waitPortFree(port)
      const server = await startServer({ ...job, readyUrl: url, headers: workload.headers })
      try {
        await closedLoop({ url, connections: 100, duration: 3, headers: workload.headers })
        const load = closedLoop({ url, connections: 100, duration: seconds + 2, headers: workload.headers })
        await sleep(1000)
        const tids = threadIds(server.pid)
        const cpu0 = treeCpuSeconds(server.pid)
        const ticks0 = machineTicks()
        const t0 = performance.now()
        // perf would keep the previous round's file as <name>.old: it goes first.
      rmSync(data, { force: true })
      const perf = spawn('perf', ['record', '-q', '-a', '-g', '-e', 'sched:sched_switch', '-o', data, '--', 'sleep', String(seconds)], { stdio: 'ignore' })
        await new Promise((resolve) => perf.on('exit', resolve))
        const ticks1 = machineTicks()
        // perf takes a moment to start and to write its file: the span is measured, not assumed.
        const cores = (treeCpuSeconds(server.pid) - cpu0) / ((performance.now() - t0) / 1000)
        const result = await load
        const script = execFileSync('perf', ['script', '-i', data], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] })
        const counts = idleSwitches(script, tids)
        const idle = ((ticks1.idle - ticks0.idle) / (ticks1.all - ticks0.all)) * cpus().length
        console.log(`round ${round} ${config}: ${Math.round(result.rps)} req/s, server ${cores.toFixed(2)} cores, idle ${idle.toFixed(2)} cores;` +
          ` switches to idle in ${seconds} s: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`)
      } finally { await server.stop() }
    }
  }
} finally {
  // perf's recording is large (tens of MB): it goes, whatever happened.
  rmSync(data, { force: true })
  rmSync(`${data}.old`, { force: true })
}
