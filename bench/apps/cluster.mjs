// node:cluster with N workers running one script: the primary accepts every connection
// and hands it to a worker (round-robin), as node:cluster does by default on Linux.
//   node cluster.mjs <workers> <script> [args...]
import cluster from 'node:cluster'

const [count, script, ...args] = process.argv.slice(2)
cluster.setupPrimary({ exec: script, args, silent: false })
for (let i = 0; i < Number(count); i++) cluster.fork()

let stopping = false
cluster.on('exit', (worker, code) => {
  if (!stopping) { process.stderr.write(`cluster worker ${worker.process.pid} exited (${code}); forking another\n`); cluster.fork() }
  if (stopping && Object.keys(cluster.workers).length === 0) process.exit(0)
})
const stop = () => {
  stopping = true
  for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGTERM')
  setTimeout(() => process.exit(0), 10_000).unref()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
