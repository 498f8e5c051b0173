import { afterEach, describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { serve, type SpindleServer } from '@spindle/runtime'
import { fixture, get } from './helpers.ts'

let server: SpindleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** `n` requests at once, each on its own connection; their statuses. */
async function together (url: string, n: number): Promise<number[]> {
  return (await Promise.all(Array.from({ length: n }, () => get(url)))).map((a) => a.status)
}

describe('render turns with shedding off', () => {
  it('runs the renders of a route with config.render a few at a time and refuses none; other routes and static prefixes start at once', async () => {
    server = await serve({ app: fixture('render-turns-app.js'), workers: 1, port: 0, host: '127.0.0.1', controlPort: false, handleSignals: false, shedding: false })
    const base = server.url
    // Warm the routes, so the JIT does not stretch the first slices.
    for (const path of ['/render', '/plain', '/assets/app.js']) await together(base + path, 4)
    await get(base + '/peak')

    // Renders of 20 slices (40 ms), so that requests read over a few ms overlap.
    expect(await together(base + '/render?slices=20', 16)).toEqual(Array(16).fill(200))
    expect(await together(base + '/plain?slices=20', 16)).toEqual(Array(16).fill(200))
    expect(await together(base + '/assets/app.js?slices=20', 16)).toEqual(Array(16).fill(200))
    const peak = (await get(base + '/peak')).json() as { render: number, plain: number, asset: number }
    // Two at a time, and one more now and then when the loop idled (reading the next requests).
    expect(peak.render).toBeGreaterThanOrEqual(1)
    expect(peak.render).toBeLessThanOrEqual(3)
    // Without the queue, requests read together render side by side.
    expect(peak.plain).toBeGreaterThan(4)
    expect(peak.asset).toBeGreaterThan(4)
  })

  it('works the same registered in a single Fastify process', async () => {
    // In a process of its own, so that the clients' connections do not share its event loop.
    const child = spawn(process.execPath, [fixture('render-turns-single.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const [line] = await once(child.stdout, 'data') as [Buffer]
      const base = line.toString().trim()
      await together(base + '/render', 4)
      await get(base + '/peak')
      expect(await together(base + '/render?slices=20', 16)).toEqual(Array(16).fill(200))
      expect(await together(base + '/plain?slices=20', 16)).toEqual(Array(16).fill(200))
      const peak = (await get(base + '/peak')).json() as { render: number, plain: number }
      expect(peak.render).toBeLessThanOrEqual(3)
      expect(peak.plain).toBeGreaterThan(4)
    } finally {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  })
})
