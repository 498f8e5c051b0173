import { afterEach, describe, expect, it } from 'vitest'
import { Agent } from 'node:http'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serve, type SpindleServer } from '@spindle/runtime'
import { fixture, get, waitFor } from './helpers.ts'

let server: SpindleServer | undefined
let dir: string | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('a worker replaced for its heap limit whose replacement cannot start', () => {
  it('keeps the old worker serving, counts each attempt and backs off between them', async () => {
    dir = mkdtempSync(join(tmpdir(), 'spindle-heap-'))
    const log = join(dir, 'starts.log')
    const flag = join(dir, 'fail')
    writeFileSync(log, '')
    server = await serve({
      app: fixture('heap-then-fail.js'), workers: 1, port: 0, controlPort: false, handleSignals: false, host: '127.0.0.1',
      maxHeapMb: 64, heapLimitRatio: 0.5, restartDelay: 300, maxRestartDelay: 1200, env: { HEAP_FAIL_LOG: log, HEAP_FAIL_FLAG: flag },
    })
    writeFileSync(flag, '')
    const agent = new Agent({ keepAlive: true })
    // 40 MB retained: past half of the 64 MB limit (the replacement's trigger), with room left
    // for the old worker to go on serving.
    for (let i = 0; i < 5; i++) await get(server.url + '/leak?mb=8', { agent })
    agent.destroy()
    await waitFor('a failed replacement', () => server!.status()[0]!.restarts >= 1, 10_000)
    const startsAt = readFileSync(log, 'utf8').trim().split('\n').length
    await new Promise((resolve) => setTimeout(resolve, 2000))
    // Backoff of 300, 600, 1200 ms: at most four more attempts in two seconds, not one per tick.
    const attempts = readFileSync(log, 'utf8').trim().split('\n').length - startsAt
    expect(attempts).toBeGreaterThanOrEqual(1)
    expect(attempts).toBeLessThanOrEqual(4)
    expect(server.status()[0]!.restarts).toBeGreaterThanOrEqual(2)
    // The old worker, near its limit, still answers.
    expect((await get(server.url + '/')).status).toBe(200)
  })
})
