import { describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { get } from './helpers.ts'

const require = createRequire(import.meta.url)
const cli = join(dirname(require.resolve('@spindle/runtime/package.json')), 'dist/cli.js')
const TOKEN = 'a-test-purge-token-0123456789'
const dir = fileURLToPath(new URL('./fixtures/spindle-start/', import.meta.url))

describe('under spindle start', () => {
  it('the guide\'s spindle.config.js shares one cache between workers, purges it from the control port and counts its answers in /metrics', async () => {
    const child = spawn(process.execPath, [cli, 'start', '--workers', '2', '--port', '0', '--control-port', '0', '--host', '127.0.0.1'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SPINDLE_CACHE_PURGE_TOKEN: TOKEN } })
    try {
      let out = ''
      child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
      const deadline = Date.now() + 30_000
      while (!/control\s+http/.test(out) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      const url = /url\s+(http\S+)/.exec(out)?.[1]
      const control = /control\s+(http\S+)/.exec(out)?.[1]
      expect(url, out).toBeDefined()
      const first = await get(`${url}/`)
      expect(first.headers.get('x-cache')).toBe('MISS')
      for (let i = 0; i < 4; i++) expect((await get(`${url}/`)).text).toBe(first.text)
      const purge = await get(`${control}/cache/purge`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: '{"tags":["home"]}' })
      expect(purge.status).toBe(200)
      expect((await get(`${url}/`)).headers.get('x-cache')).toBe('MISS')
      // The runtime's /metrics counts what the cache answered, across both workers, once no
      // response is still closing (before that a worker is not asked: docs/runtime.md#metrics).
      const deadline2 = Date.now() + 5000
      while (Date.now() < deadline2) {
        const workers = JSON.parse((await get(`${control}/status`)).text).workers as Array<{ inflight: number }>
        if (workers.every((w) => w.inflight === 0)) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const metrics = (await get(`${control}/metrics`)).text
      expect(metrics).toMatch(/^spindle_cache_responses_total\{outcome="miss"\} 2$/m)
      expect(metrics).toMatch(/^spindle_cache_responses_total\{outcome="hit"\} 4$/m)
      expect(metrics).toMatch(/^spindle_http_renders_total 2$/m)
      // Hits are answered in the cache's onRequest hook, before the route's own hooks: still labelled by their route.
      expect(metrics).toMatch(/^spindle_http_request_duration_seconds_count\{route="\/",status_class="2xx"\} 6$/m)
    } finally {
      child.kill('SIGTERM')
      if (child.exitCode === null) await once(child, 'exit')
    }
  })
})
