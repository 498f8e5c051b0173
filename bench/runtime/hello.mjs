// Hello-world throughput: one Fastify process vs Spindle with 1 and 2 workers, measured in
// one run with configurations alternating round by round (A B C A B C ...), so drift on a
// shared machine hits them all alike. Load: autocannon, 100 connections, 127.0.0.1 only.
//
//   node bench/runtime/hello.mjs [--rounds 3] [--duration 10]
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, duration: { type: 'string', default: '10' } } })
const rounds = Number(values.rounds)
const duration = Number(values.duration)
const root = fileURLToPath(new URL('../../', import.meta.url))
const app = root + 'examples/fastify/app.js'
const cli = root + 'packages/runtime/dist/cli.js'
const port = 3700

const configs = {
  'fastify (1 process)': [fileURLToPath(new URL('./single.mjs', import.meta.url)), app, String(port)],
  'spindle 1 worker': [cli, 'start', app, '-w', '1', '-p', String(port), '-H', '127.0.0.1', '--no-control'],
  'spindle 2 workers': [cli, 'start', app, '-w', '2', '-p', String(port), '-H', '127.0.0.1', '--no-control'],
}

function cpuSeconds (pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100 // utime + stime, clock ticks of 10 ms
}

async function start (args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start in 30 s')), 30_000)
    const check = (chunk) => { if (/listening|ready in/.test(String(chunk))) { clearTimeout(timer); resolve() } }
    child.stdout.on('data', check)
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
  })
  return child
}

async function stop (child) {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await new Promise((resolve) => child.once('exit', resolve))
  clearTimeout(timer)
}

const results = Object.fromEntries(Object.keys(configs).map((k) => [k, []]))
for (let round = 1; round <= rounds; round++) {
  for (const [name, args] of Object.entries(configs)) {
    const child = await start(args)
    try {
      await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 100, duration: 2 }) // warm-up
      const cpu0 = cpuSeconds(child.pid)
      const r = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 100, duration })
      const cpu = (cpuSeconds(child.pid) - cpu0) / duration
      results[name].push({ rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx, cpu })
      process.stderr.write(`round ${round} ${name}: ${Math.round(r.requests.average)} req/s, p99 ${r.latency.p99} ms, cpu ${cpu.toFixed(2)} cores\n`)
    } finally {
      await stop(child)
    }
  }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }
const base = median(results['fastify (1 process)'].map((r) => r.rps))
const lines = ['| configuration | req/s (median, min–max) | vs 1 process | p99 ms | server CPU (cores) | errors |', '|---|---|---|---|---|---|']
for (const [name, rs] of Object.entries(results)) {
  const rps = rs.map((r) => r.rps)
  lines.push(`| ${name} | ${Math.round(median(rps))} (${Math.round(Math.min(...rps))}–${Math.round(Math.max(...rps))}) | ${(median(rps) / base).toFixed(2)}x | ${median(rs.map((r) => r.p99))} | ${median(rs.map((r) => r.cpu)).toFixed(2)} | ${rs.reduce((n, r) => n + r.errors, 0)} |`)
}
process.stdout.write(`\nHello world, ${rounds} rounds x ${duration} s, 100 connections, Node.js ${process.version}\n\n${lines.join('\n')}\n`)
