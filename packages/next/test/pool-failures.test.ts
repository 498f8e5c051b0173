// nextAdapter with threads: a client that leaves stops Next's render in the pool thread, and
// a pool thread that dies fails only its own requests and is replaced. Its own server: no
// request here loads sharp (next/image) in a thread that is then ended.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyInstance } from 'fastify'
import { connect } from 'node:net'
import { request } from 'undici'
import { nextAdapter } from '@spindle/next'
import { renderPoolStats } from '@spindle/runtime/pool'
import { appDir, buildApp } from './fixtures/build.ts'

const tmp = mkdtempSync(join(tmpdir(), 'spindle-next-pool-'))
const ticksLog = join(tmp, 'ticks.log')
const bigLog = join(tmp, 'big.log')
let fastify: FastifyInstance
let base: string

beforeAll(async () => {
  buildApp()
  // Pool threads start with a copy of this environment.
  process.env.TICKS_LOG = ticksLog
  process.env.BIG_LOG = bigLog
  fastify = Fastify()
  await fastify.register(nextAdapter, { dir: appDir, threads: 2, threadConcurrency: 2 })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
}, 240_000)

afterAll(async () => {
  await fastify?.close()
  delete process.env.TICKS_LOG
  delete process.env.BIG_LOG
  rmSync(tmp, { recursive: true, force: true })
})

async function get (path: string) {
  const res = await request(base + path)
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

function lines (file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean)
  } catch {
    return []
  }
}
const ticks = (): string[] => lines(ticksLog)

describe('nextAdapter with threads: failures', () => {
  it('gives route handlers in pool threads the port Fastify bound (port 0), not localhost:3000', async () => {
    const { port } = new URL(base)
    expect(JSON.parse((await get('/api/url?x=1')).body).url).toBe(`http://localhost:${port}/api/url?x=1`)
  })

  it('streams a route handler and stops it in the pool thread when the client disconnects', async () => {
    const ac = new AbortController()
    const res = await request(base + '/api/ticks', { signal: ac.signal })
    const seen: string[] = []
    for await (const chunk of res.body) {
      seen.push(String(chunk))
      if (seen.join('').includes('tick 3')) break
    }
    ac.abort()
    let log: string[] = []
    for (let i = 0; i < 40 && !log.includes('cancelled'); i++) {
      await sleep(50)
      log = ticks()
    }
    expect(log).toContain('cancelled')
    await sleep(300)
    // Nothing rendered after the cancellation, and far fewer than the 100 ticks of a full run.
    const after = ticks()
    expect(after.at(-1)).toBe('cancelled')
    expect(after.length).toBeLessThan(30)
    // The slot was given back: the pool still serves.
    expect((await get('/api/thread')).status).toBe(200)
  })

  it('stops a route handler in the pool thread when the client leaves before its head was written', async () => {
    rmSync(ticksLog, { force: true })
    // /api/ticks writes its head with its first tick, 50 ms in: the client leaves as soon as
    // the request runs on a pool thread, well before that.
    const socket = connect(Number(new URL(base).port), '127.0.0.1')
    socket.on('error', () => {})
    socket.write('GET /api/ticks HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
    const busy = () => renderPoolStats().reduce((n, s) => n + s.busy, 0)
    for (let i = 0; i < 5000 && busy() === 0; i++) await new Promise((resolve) => setImmediate(resolve))
    socket.destroy()
    let log: string[] = []
    for (let i = 0; i < 40 && !log.includes('cancelled'); i++) {
      await sleep(50)
      log = ticks()
    }
    expect(log).toContain('cancelled')
    await sleep(300)
    expect(ticks().at(-1)).toBe('cancelled')
    expect(ticks().length).toBeLessThan(10)
  })

  it('holds a fast render back to a slow client: back-pressure from the socket to Next', async () => {
    const res = await request(base + '/api/big')
    expect(res.statusCode).toBe(200)
    // The client reads nothing for a while: the render must stop a few MB ahead (socket
    // buffers, the credit window), not make all 64 MB.
    await sleep(1500)
    const ahead = lines(bigLog).length
    expect(ahead).toBeLessThan(16)
    let received = 0
    for await (const chunk of res.body) received += (chunk as Buffer).length
    expect(received).toBe(64 * 1024 * 1024)
    expect(lines(bigLog).length).toBe(64)
  })

  it('a pool thread that dies fails only its own requests (502) and is replaced', async () => {
    const before = new Set<number>()
    for (let i = 0; i < 20 && before.size < 2; i++) {
      for (const res of await Promise.all([get('/api/thread'), get('/api/thread'), get('/api/thread'), get('/api/thread')])) before.add(JSON.parse(res.body).thread)
    }
    expect(before.size).toBe(2)
    // The dying request goes to one thread; the stream, sent while it runs, to the other.
    const crash = get('/api/crash')
    await sleep(100)
    const other = get('/stream')
    const crashed = await crash
    expect(crashed.status).toBe(502)
    // How the thread ended is for the log, not for the client.
    expect(JSON.parse(crashed.body)).toMatchObject({ code: 'SPINDLE_RUNTIME_POOL_THREAD_FAILED', message: 'The render pool thread serving this request failed' })
    const page = await other
    expect(page.status).toBe(200)
    expect(page.body).toContain('slow part done')
    // A replacement prepares Next (about 1.5 s) and then serves beside the survivor.
    const after = new Set<number>()
    for (let i = 0; i < 200 && after.size < 2; i++) {
      for (const res of await Promise.all([get('/api/thread'), get('/api/thread')])) if (res.status === 200) after.add(JSON.parse(res.body).thread)
      if (after.size < 2) await sleep(100)
    }
    expect(after.size).toBe(2)
    expect([...after].filter((t) => !before.has(t))).toHaveLength(1)
  }, 60_000)
})

describe('nextAdapter with threads: admission in the thread that runs Fastify', () => {
  it('answers 503 at once to a request that could not start within maxBacklog, without sending it to the pool', async () => {
    const small = Fastify()
    try {
      // One render at a time, 100 ms of backlog; /api/spin?ms=300 keeps the thread's CPU busy
      // for 300 ms (a render that only waited would let more start on the thread's idle time).
      await small.register(nextAdapter, { dir: appDir, threads: 1, threadConcurrency: 1, maxBacklog: 100 })
      const url = await small.listen({ port: 0, host: '127.0.0.1' })
      // Enough renders for the pool to know how long one takes.
      for (let i = 0; i < 6; i++) expect((await request(url + '/api/spin?ms=300')).statusCode).toBe(200)
      const ends: Array<{ status: number, code?: string, retryAfter?: string }> = []
      await Promise.all(Array.from({ length: 5 }, async () => {
        const res = await request(url + '/api/spin?ms=300')
        const body = await res.body.text()
        ends.push({ status: res.statusCode, code: res.statusCode === 503 ? JSON.parse(body).code : undefined, retryAfter: res.headers['retry-after'] as string | undefined })
      }))
      const shed = ends.filter((e) => e.status === 503)
      expect(shed.length).toBeGreaterThan(0)
      expect(ends.filter((e) => e.status === 200).length).toBeGreaterThan(0)
      for (const e of shed) expect(e).toMatchObject({ code: 'SPINDLE_RUNTIME_POOL_OVERLOADED', retryAfter: '1' })
      // The 503s came first: they never waited for a render.
      expect(ends.slice(0, shed.length).every((e) => e.status === 503)).toBe(true)
    } finally {
      await small.close()
    }
  })
})
