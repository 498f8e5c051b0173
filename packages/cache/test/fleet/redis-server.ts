import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type Server, type Socket, connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/** A free TCP port on 127.0.0.1 (the kernel picks it; closed again before use). */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface RedisServer {
  readonly port: number
  readonly url: string
  stop (): Promise<void>
  start (): Promise<void>
}

/** A real redis-server on a free port, without persistence; stop() kills it (SIGKILL), start() brings it back empty. */
export async function startRedis (): Promise<RedisServer> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'], { stdio: 'ignore' })
    for (let i = 0; i < 200; i++) {
      if (await canConnect(port)) return
      await sleep(25)
    }
    throw new Error(`redis-server did not start on port ${port}`)
  }
  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    start,
    async stop () {
      if (!child || child.exitCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGKILL')
      await exited
    },
  }
}

async function canConnect (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

/** A TCP proxy to Redis that can be cut (a network partition for one process) and restored. */
export interface Partition { readonly url: string, cut (): void, restore (): void, close (): Promise<void> }

export async function proxyTo (port: number): Promise<Partition> {
  const sockets = new Set<Socket>()
  let open = true
  const server: Server = createServer((client) => {
    if (!open) { client.destroy(); return }
    const upstream = connect(port, '127.0.0.1')
    sockets.add(client).add(upstream)
    const drop = (): void => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream).pipe(client)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const cut = (): void => { open = false; for (const s of sockets) s.destroy() }
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}/0`,
    cut,
    restore () { open = true },
    async close () { cut(); await new Promise((resolve) => server.close(resolve)) },
  }
}
