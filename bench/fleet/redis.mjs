// A throwaway redis-server on a free port, for the fleet benchmarks.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect, createServer } from 'node:net'

async function freePort () {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

export async function startRedis () {
  const port = await freePort()
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((resolve) => {
      const s = connect(port, '127.0.0.1')
      s.once('connect', () => { s.destroy(); resolve(true) })
      s.once('error', () => resolve(false))
    })
    if (up) break
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    async stop () {
      if (child.exitCode !== null) return
      child.kill('SIGKILL')
      await once(child, 'exit')
    },
  }
}
