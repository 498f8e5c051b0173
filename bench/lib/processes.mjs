// Starting, watching and stopping the servers under test: by process id, in their own
// process group, always stopped, never left behind.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

const TICK = 100 // clock ticks per second in /proc/<pid>/stat on Linux

function stat (pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / TICK }
  } catch {
    return undefined
  }
}

/** The process and every descendant (PM2 and node:cluster workers are child processes). */
export function processTree (root) {
  const children = new Map()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const s = stat(name)
    if (!s) continue
    if (!children.has(s.ppid)) children.set(s.ppid, [])
    children.get(s.ppid).push(Number(name))
  }
  const out = []
  const walk = (pid) => { out.push(pid); for (const c of children.get(pid) ?? []) walk(c) }
  walk(root)
  return out
}

/** CPU seconds (user + system) used so far by the process tree. */
export function treeCpuSeconds (root) {
  return processTree(root).reduce((sum, pid) => sum + (stat(pid)?.cpu ?? 0), 0)
}

/**
 * Resident memory of the process tree, in bytes: `rss` sums each process's VmRSS (what
 * `ps` and most dashboards show; pages shared between processes count once per process),
 * `pss` sums the proportional set size (a shared page split among the processes that map
 * it), the fairer figure when comparing threads in one process with N processes.
 */
export function treeMemory (root) {
  let rss = 0
  let pss = 0
  for (const pid of processTree(root)) {
    try {
      const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
      rss += kb(text, 'Rss')
      pss += kb(text, 'Pss')
    } catch { /* gone, or not readable */ }
  }
  return { rss, pss }
}

function kb (text, field) {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)
  return m ? Number(m[1]) * 1024 : 0
}

/**
 * Samples treeMemory() every `everyMs` until stop() is called; stop() gives the median and
 * the peak of each figure over the samples.
 */
export function sampleMemory (root, everyMs = 500) {
  const samples = []
  const take = () => samples.push(treeMemory(root))
  take()
  const timer = setInterval(take, everyMs)
  return {
    stop () {
      clearInterval(timer)
      take()
      const of = (f) => samples.map((s) => s[f]).sort((a, b) => a - b)
      const rss = of('rss')
      const pss = of('pss')
      return { rssMedian: rss[rss.length >> 1], rssPeak: rss.at(-1), pssMedian: pss[pss.length >> 1], pssPeak: pss.at(-1), samples: samples.length }
    },
  }
}

export async function portAnswers (port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const socket = connect({ port, host })
    const done = (v) => { socket.destroy(); resolve(v) }
    socket.setTimeout(300, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/**
 * Starts `command args` in its own process group and waits until `readyUrl` answers 2xx
 * (or 3xx), bounded by `timeout`.
 */
export async function startServer ({ command, args, cwd, env, readyUrl, headers = {}, timeout = 90_000 }) {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  const keep = (c) => { output = (output + c).slice(-4000) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const server = { child, pid: child.pid, output: () => output, stop: () => stopServer(child) }
  const deadline = Date.now() + timeout
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output}`)
    }
    try {
      const res = await fetch(readyUrl, { headers, redirect: 'manual', signal: AbortSignal.timeout(5000) })
      await res.arrayBuffer()
      if (res.status < 400) return server
    } catch { /* not up yet */ }
    await sleep(200)
  }
  await stopServer(child)
  throw new Error(`server not ready at ${readyUrl} within ${timeout} ms:\n${output}`)
}

/** SIGTERM to the whole process group, SIGKILL after 15 s; resolves once every process is gone. */
export async function stopServer (child) {
  const pids = processTree(child.pid)
  const signal = (sig) => {
    try { process.kill(-child.pid, sig) } catch { /* group gone */ }
    for (const pid of pids) { try { process.kill(pid, sig) } catch { /* gone */ } }
  }
  if (child.exitCode === null && child.signalCode === null) signal('SIGTERM')
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline && pids.some((pid) => stat(pid))) await sleep(100)
  if (pids.some((pid) => stat(pid))) signal('SIGKILL')
  while (pids.some((pid) => stat(pid))) await sleep(50)
}

/** Waits until nothing answers on the port any more (a stopped server's port is free again). */
export async function waitPortFree (port, timeout = 15_000) {
  const deadline = Date.now() + timeout
  while (Date.now() < deadline) {
    if (!(await portAnswers(port))) return
    await sleep(100)
  }
  throw new Error(`port ${port} still answers after the server stopped`)
}
