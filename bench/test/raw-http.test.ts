import { once } from 'node:events'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain ES module of the benchmarks, without types
import { getRequestBytes, RawConnection } from '../lib/raw-http.mjs'

const closers: Array<() => void> = []
afterEach(() => { while (closers.length > 0) closers.pop()!() })

async function listen (server: { listen: (port: number, host: string) => unknown, address: () => unknown, close: () => unknown }): Promise<number> {
  server.listen(0, '127.0.0.1')
  await once(server as never, 'listening')
  closers.push(() => server.close())
  return (server.address() as AddressInfo).port
}

describe('the load generator\'s HTTP/1.1 client', () => {
  it('reads content-length and chunked bodies, statuses and X-Spindle-Shed from node:http, request after request on one connection', async () => {
    let seen = 0
    const connections = new Set<unknown>()
    const port = await listen(createHttpServer((req, res) => {
      connections.add(req.socket)
      seen++
      if (seen % 3 === 0) { res.writeHead(503, { 'x-spindle-shed': 'overload', 'content-length': 5 }).end('shed!'); return }
      if (seen % 3 === 1) { res.end('x'.repeat(1000 + seen)); return }
      let k = 0
      res.writeHead(200)
      const more = (): void => { if (k++ < 5) { res.write('y'.repeat(1 + (seen * k) % 20_000)); setImmediate(more) } else res.end() }
      more()
    }))
    const c = new RawConnection('127.0.0.1', port, getRequestBytes(`127.0.0.1:${port}`, '/'))
    closers.push(() => c.abort(new Error('end')))
    const counts: Record<string, number> = {}
    for (let i = 0; i < 300; i++) {
      const { status, shed } = await c.send()
      counts[`${status} ${shed}`] = (counts[`${status} ${shed}`] ?? 0) + 1
    }
    expect(counts).toEqual({ '200 ': 200, '503 overload': 100 })
    expect(connections.size).toBe(1)
  })

  it('finds the end of a chunked response cut anywhere, even between the CR and LF of a chunk-size line', async () => {
    const response = Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\na;ext=1\r\n0123456789\r\n0\r\ntrailer: x\r\n\r\n')
    const sockets: Socket[] = []
    let cut = 1
    const port = await listen(createTcpServer((socket) => {
      sockets.push(socket)
      socket.on('data', async () => {
        // Write the response in pieces of `cut` bytes, one piece per turn of the loop.
        for (let at = 0; at < response.length; at += cut) {
          socket.write(response.subarray(at, at + cut))
          await new Promise((resolve) => setTimeout(resolve, 1))
        }
      })
    }))
    closers.push(() => { for (const s of sockets) s.destroy() })
    const c = new RawConnection('127.0.0.1', port, getRequestBytes(`127.0.0.1:${port}`, '/'))
    closers.push(() => c.abort(new Error('end')))
    for (cut = 1; cut <= 9; cut++) expect(await c.send()).toEqual({ status: 200, shed: '' })
    expect(sockets).toHaveLength(1)
  })

  it('fails a request whose connection closes before the answer, and opens a new connection for the next', async () => {
    let requests = 0
    const port = await listen(createTcpServer((socket) => {
      socket.on('data', () => {
        requests++
        if (requests === 1) socket.destroy()
        else socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok')
      })
    }))
    const c = new RawConnection('127.0.0.1', port, getRequestBytes(`127.0.0.1:${port}`, '/'))
    closers.push(() => c.abort(new Error('end')))
    await expect(c.send()).rejects.toThrow('connection closed')
    expect(await c.send()).toEqual({ status: 200, shed: '' })
    expect(await c.send()).toEqual({ status: 200, shed: '' })
    expect(requests).toBe(3)
  })
})
