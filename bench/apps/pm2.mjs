// PM2 in cluster mode with N instances, driven through its API with no daemon, so it runs
// in the foreground and leaves nothing behind (PM2_HOME is a fresh temporary folder).
//   PM2_BENCH='{"instances":2,"script":"/abs/script.js","args":["start"]}' node pm2.mjs
// The job comes in the environment, not in argv: PM2's cluster workers inherit this
// process's argv ahead of their own arguments.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const home = mkdtempSync(join(tmpdir(), 'spindle-bench-pm2-'))
process.env.PM2_HOME = home
const { default: pm2 } = await import('pm2')
const { instances, script, args = [] } = JSON.parse(process.env.PM2_BENCH ?? '{}')
delete process.env.PM2_BENCH

const call = (fn, ...a) => new Promise((resolve, reject) => fn.call(pm2, ...a, (err, out) => err ? reject(err) : resolve(out)))

await call(pm2.connect, true)
await call(pm2.start, {
  name: 'bench',
  script,
  args,
  cwd: process.cwd(),
  exec_mode: 'cluster',
  instances: Number(instances),
  autorestart: true,
  env: { ...process.env },
})
process.stdout.write(`pm2 started ${instances} instances of ${script}\n`)

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  try { await call(pm2.delete, 'all') } catch { /* already gone */ }
  try { await call(pm2.killDaemon) } catch { /* no daemon in this mode */ }
  pm2.disconnect()
  rmSync(home, { recursive: true, force: true })
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
