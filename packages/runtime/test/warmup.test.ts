import { Agent } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { serve, type SpindleServer } from '@spindle/runtime'
import { fixture, get } from './helpers.ts'

let server: SpindleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const base = { app: fixture('warmup-app.js'), port: 0, controlPort: 0, handleSignals: false, host: '127.0.0.1', workers: 1 } as const

describe('warm-up of a worker that replaces another', () => {
  it('sends warmup.requests through the app before the replacement listens; the old worker serves meanwhile, nothing fails', async () => {
    const logs: Array<{ fields: Record<string, unknown>, msg: string }> = []
    const logger = { info (fields: Record<string, unknown>, msg: string) { logs.push({ fields, msg }) }, warn () {}, error () {} }
    server = await serve({ ...base, logger, warmup: { paths: ['/'], requests: 8 } })
    const url = server.url
    // The first workers are not warmed: nobody serves before them.
    const before = (await get(url + '/warm')).json() as { threadId: number, warmups: number }
    expect(before.warmups).toBe(0)

    // Renders keep coming during the rolling restart over a kept-alive connection: every one
    // is served.
    let running = true
    const statuses: number[] = []
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const load = (async () => {
      while (running) statuses.push((await get(url + '/', { agent })).status)
    })()
    await server.restart()
    running = false
    await load
    agent.destroy()
    expect(statuses.length).toBeGreaterThan(5)
    expect(statuses.filter((s) => s !== 200)).toEqual([])

    const after = (await get(url + '/warm')).json() as { threadId: number, warmups: number, renders: number }
    expect(after.threadId).not.toBe(before.threadId)
    expect(after.warmups).toBe(8)
    const report = logs.find((l) => l.msg === 'replacement warmed up before taking traffic')
    expect(report?.fields).toMatchObject({ worker: 1, requests: 8, failed: 0 })
    expect(server.status()[0]!.generation).toBe(2)
  })

  it('warms the pages the app\'s adapters announce after warmup.paths\' default, and only the configured paths when given', async () => {
    server = await serve({ ...base, app: fixture('warmup-pages-app.js'), warmup: { requests: 3 } })
    expect((await get(server.url + '/warm')).json()).toEqual({})
    await server.restart()
    expect((await get(server.url + '/warm')).json()).toEqual({ '/': 3, '/a': 3, '/b': 3 })
    await server.close()

    server = await serve({ ...base, app: fixture('warmup-pages-app.js'), warmup: { paths: ['/b'], requests: 2 } })
    await server.restart()
    expect((await get(server.url + '/warm')).json()).toEqual({ '/b': 2 })
  })

  it('is off with warmup: false, and bad warm-up options fail at start', async () => {
    server = await serve({ ...base, warmup: false })
    await server.restart()
    expect(((await get(server.url + '/warm')).json() as { warmups: number }).warmups).toBe(0)
    await expect(serve({ ...base, warmup: { paths: ['nope'] } })).rejects.toMatchObject({
      code: 'SPINDLE_RUNTIME_INVALID_OPTION', message: "warmup.paths.0 must be a path starting with '/', got \"nope\"",
    })
    await expect(serve({ ...base, warmup: { request: 3 } as never })).rejects.toMatchObject({
      code: 'SPINDLE_RUNTIME_INVALID_OPTION', message: 'unknown option "warmup.request"',
    })
  })
})
