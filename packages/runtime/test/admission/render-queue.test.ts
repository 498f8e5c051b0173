import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyReply } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { AdmissionController } from '../../src/admission/controller.ts'
import { RenderQueue } from '../../src/admission/render-queue.ts'

// A real HTTP server whose every request is a render admitted by a RenderQueue, answered
// after `?ms=` milliseconds (0: at once). The queue reads the busy time through `reads`.
let server: Server | undefined
afterEach(async () => {
  await new Promise<void>((resolve) => { if (server) server.close(() => resolve()); else resolve() })
  server = undefined
})

async function start (): Promise<{ url: string, reads: () => number, controller: AdmissionController }> {
  let reads = 0
  const controller = new AdmissionController({ budget: 1000, target: 10 })
  const queue = new RenderQueue(controller, 0, (reply) => { reply.raw.statusCode = 503; reply.raw.end() }, () => {}, () => {
    reads++
    return performance.now()
  })
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 0)
    // The queue reaches the raw request and response through these two fields only.
    const reply = { raw: res, request: { raw: req } } as unknown as FastifyReply
    const now = performance.now()
    const refused = queue.admit(reply, () => {
      if (ms === 0) res.end('ok')
      else setTimeout(() => res.end('ok'), ms)
    }, now, now)
    if (refused) { res.statusCode = 503; res.end() }
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/`, reads: () => reads, controller }
}

describe('RenderQueue', () => {
  it('reads the thread\'s busy time at the end of renders of 1 ms or more, not of shorter ones', async () => {
    const { url, reads, controller } = await start()
    // The first renders run cold.
    for (let i = 0; i < 10; i++) expect((await fetch(url)).status).toBe(200)
    const before = reads()
    for (let i = 0; i < 50; i++) expect((await fetch(url)).status).toBe(200)
    // Renders answered at once take well under 1 ms; a stall of the machine may stretch one.
    expect(reads() - before).toBeLessThan(5)
    const short = reads()
    for (let i = 0; i < 5; i++) expect((await fetch(url + '?ms=5')).status).toBe(200)
    expect(reads() - short).toBe(5)
    // Every render ended and was counted, read or not.
    expect(controller.running).toBe(0)
  })
})
