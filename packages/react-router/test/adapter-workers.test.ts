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
    workers: 2, port: 0, host: '127.0.0.1', controlPort: false, handleSignals: false,
  })
}, 240_000)

afterAll(async () => { await server?.close() })

describe('reactRouterAdapter in 2 runtime workers', () => {
  it('serves the app from both workers', async () => {
    const threads = new Set<number>()
    for (let i = 0; i < 100 && threads.size < 2; i++) {
      const res = await request(server.url + '/api/data', { reset: true })
      threads.add((await res.body.json() as { thread: number }).thread)
    }
    expect(threads.size).toBe(2)
    const page = await request(server.url + '/slow', { headers: { 'user-agent': 'Mozilla/5.0 Chrome/131.0' } })
    expect(await page.body.text()).toContain('deferred value arrived')
    const action = await request(server.url + '/form', { method: 'POST', body: 'name=lin', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect(await action.body.text()).toContain('form<!-- -->:<!-- -->lin')
  })
})
