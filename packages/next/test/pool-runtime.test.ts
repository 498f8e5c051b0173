// What `spindle start --mode pool` does to the adapter: one runtime worker whose
// environment has SPINDLE_POOL_THREADS; the app registers nextAdapter without `threads`.
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
    workers: 1, port: 0, host: '127.0.0.1', controlPort: false, handleSignals: false,
    env: { SPINDLE_POOL_THREADS: '2', NEXT_TELEMETRY_DISABLED: '1' },
  })
})

afterAll(async () => { await server?.close() })

async function get (path: string) {
  const res = await request(server.url + path)
  return { status: res.statusCode, body: await res.body.text() }
}

describe('nextAdapter in a runtime worker with SPINDLE_POOL_THREADS', () => {
  it('renders in that many pool threads behind the one worker', async () => {
    const threads = new Set<number>()
    for (let i = 0; i < 20 && threads.size < 2; i++) {
      for (const res of await Promise.all([get('/api/thread'), get('/api/thread'), get('/api/thread')])) {
        expect(res.status).toBe(200)
        threads.add(JSON.parse(res.body).thread)
      }
    }
    expect(threads.size).toBe(2)
  })

  it("gives route handlers the worker's address, from a pool thread", async () => {
    // Next writes a loopback address as localhost.
    expect(JSON.parse((await get('/api/url?x=1')).body).url).toBe(`http://localhost:${server.port}/api/url?x=1`)
  })
})
