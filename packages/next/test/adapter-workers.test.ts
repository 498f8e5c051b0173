import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { serve, type SpindleServer } from '@spindle/runtime'
import { buildApp } from './fixtures/build.ts'

let server: SpindleServer

beforeAll(async () => {
  buildApp()
  server = await serve({
    app: fileURLToPath(new URL('./fixtures/app-module.js', import.meta.url)),
    workers: 2, port: 0, host: '127.0.0.1', controlPort: 0, handleSignals: false,
  })
})

afterAll(async () => { await server?.close() })

async function fresh (path: string, init: Parameters<typeof request>[1] = {}) {
  // A new connection per request, so the kernel may pick either worker.
  const res = await request(server.url + path, { ...init, reset: true })
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('nextAdapter in 2 runtime workers', () => {
  it('serves Next from both workers, each having prepared Next once', async () => {
    const threads = new Set<number>()
    for (let i = 0; i < 100 && threads.size < 2; i++) {
      const res = await fresh('/api/thread')
      expect(res.status).toBe(200)
      threads.add(JSON.parse(res.body).thread)
    }
    expect(threads.size).toBe(2)
  })

  it('gives route handlers the URL the worker listens on, not localhost:3000', async () => {
    // Next writes a loopback address as localhost. New connections, so both workers answer.
    for (let i = 0; i < 6; i++) expect(JSON.parse((await fresh('/api/url?x=1')).body).url).toBe(`http://localhost:${server.port}/api/url?x=1`)
  })

  it('renders, streams and accepts bodies in workers', async () => {
    expect((await fresh('/')).body).toContain('home')
    expect((await fresh('/stream')).body).toContain('slow part done')
    const echo = await fresh('/api/echo', { method: 'POST', body: 'raw body', headers: { 'content-type': 'text/plain' } })
    expect(JSON.parse(echo.body).text).toBe('raw body')
  })

  it('finishes a streamed response in flight when a worker drains', async () => {
    const pending = fresh('/stream')
    await new Promise((resolve) => setTimeout(resolve, 50))
    const restarting = server.restart()
    const res = await pending
    expect(res.status).toBe(200)
    expect(res.body).toContain('slow part done')
    await restarting
    expect(server.status().map((w) => w.generation)).toEqual([2, 2])
    expect((await fresh('/static')).status).toBe(200)
  })
})
