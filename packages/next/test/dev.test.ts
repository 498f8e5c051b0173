// `dev: true`: Next's dev server through the adapter, HMR websocket included. It runs on a
// copy of the fixture (dev writes its own output and the test edits a page), placed next to
// the fixture so `next` resolves from this package.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { upgradeRequest } from '../../runtime/test/raw-http.ts'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { nextAdapter } from '@spindle/next'
import { appDir } from './fixtures/build.ts'

let fastify: FastifyInstance
let base: string
let dir: string

beforeAll(async () => {
  process.env.NEXT_TELEMETRY_DISABLED = '1'
  dir = mkdtempSync(join(appDir, '..', '.dev-'))
  cpSync(appDir, dir, { recursive: true, filter: (src) => !src.includes(`${join(appDir, '.next')}`) })
  fastify = Fastify()
  fastify.get('/own', async () => ({ route: 'own' }))
  await fastify.register(nextAdapter, { dir, dev: true })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
}, 120_000)

afterAll(async () => {
  await fastify?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

async function get (path: string, headers: Record<string, string> = {}) {
  const res = await request(base + path, { headers })
  return { status: res.statusCode, body: await res.body.text() }
}

/** Opens a websocket and records what it receives; rejects if the server refuses it. */
function connect (url: string): Promise<{ ws: WebSocket, messages: string[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    const messages: string[] = []
    ws.addEventListener('message', (event) => { messages.push(String(event.data)) })
    ws.addEventListener('open', () => resolve({ ws, messages }), { once: true })
    ws.addEventListener('error', () => reject(new Error(`websocket to ${url} failed`)), { once: true })
  })
}


async function until<T> (what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeout: number): Promise<T> {
  const end = Date.now() + timeout
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe('nextAdapter with dev: true', () => {
  it('compiles and serves pages on demand next to the user routes', async () => {
    const page = await get('/static')
    expect(page.status).toBe(200)
    expect(page.body).toContain('static page')
    expect((await get('/own')).body).toBe('{"route":"own"}')
  }, 120_000)

  it('opens the HMR websocket on the Fastify server and pushes a change to a page', async () => {
    // Next attaches its upgrade listener to the server with the first request it handles, as
    // a browser's first page load does; the page it loads is the one edited below.
    expect((await get('/static')).status).toBe(200)
    const { ws, messages } = await connect(base.replace('http', 'ws') + '/_next/hmr')
    try {
      const types = () => messages.map((m) => (JSON.parse(m) as { type?: string }).type)
      // The dev server greets a new client with its build state as soon as it is connected.
      await until('the HMR greeting', () => types().includes('sync'), 30_000)
      expect(types()).not.toContain('serverComponentChanges')

      const file = join(dir, 'app', 'static', 'page.jsx')
      writeFileSync(file, readFileSync(file, 'utf8').replace('static page', 'edited page'))
      await until('an HMR message about the edit', () => types().includes('serverComponentChanges'), 60_000)
      await until('the edited page to be served', async () => (await get('/static')).body.includes('edited page'), 60_000)
    } finally {
      ws.close()
    }
  }, 150_000)

  it("keeps Next's cross-site check on the websocket: an origin that is not allowed is refused", async () => {
    const refused = await new Promise<boolean>((resolve) => {
      const ws = new WebSocket(base.replace('http', 'ws') + '/_next/hmr', { headers: { origin: 'http://elsewhere.example' } } as never)
      ws.addEventListener('open', () => { ws.close(); resolve(false) }, { once: true })
      ws.addEventListener('error', () => resolve(true), { once: true })
    })
    expect(refused).toBe(true)
  }, 30_000)

  it("answers requests with an Upgrade header that are not Next's HMR like any request", async () => {
    // Next's upgrade listener is on once it has handled a request, as in a browser session.
    expect((await get('/static')).status).toBe(200)
    // curl --http2 sends `Upgrade: h2c`: the user's route and the pages answer it as HTTP/1.1.
    const own = await upgradeRequest(base, '/own', 'h2c')
    expect(own.status).toBe('HTTP/1.1 200 OK')
    expect(own.body).toContain('"route":"own"')
    // A websocket upgrade nothing takes: the page itself.
    const page = await upgradeRequest(base, '/static', 'websocket')
    expect(page.status).toBe('HTTP/1.1 200 OK')
    expect(page.body).toContain('page')
  }, 60_000)

  // Last: it closes the server the tests share.
  it('closes at once with an HMR websocket open, as with a browser tab open', async () => {
    const { ws } = await connect(base.replace('http', 'ws') + '/_next/hmr')
    const socketClosed = once(ws, 'close')
    const started = Date.now()
    const closing = fastify.close().then(() => 'closed')
    const outcome = await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 5_000, 'still open after 5 s'))])
    expect(outcome).toBe('closed')
    expect(Date.now() - started).toBeLessThan(5_000)
    await socketClosed
  }, 30_000)
})

describe('spindle dev with a Next.js app', () => {
  // Next's dev server leaves its file watcher, its validation worker and Turbopack's
  // subscriptions running after close() (src/dev-leftovers.ts): they kept the worker thread
  // alive until shutdownTimeout terminated it, so every stop took the full 10 s.
  it('stops well within shutdownTimeout and exits 0', async () => {
    const copy = mkdtempSync(join(appDir, '..', '.dev-stop-'))
    cpSync(appDir, copy, { recursive: true, filter: (src) => !src.includes(`${join(appDir, '.next')}`) })
    const cli = fileURLToPath(new URL('../../runtime/bin/spindle.js', import.meta.url))
    const app = fileURLToPath(new URL('./fixtures/dev-app-module.js', import.meta.url))
    const child = spawn(process.execPath, [cli, 'dev', app, '--port', '0', '--shutdown-timeout', '10000'], {
      cwd: copy,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', SPINDLE_TEST_NEXT_DIR: copy },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    try {
      const url = await until('spindle dev to listen', () => /^\s*url\s+(http:\/\/\S+)/m.exec(out)?.[1], 90_000)
      // A page compiled and served, as in a browser session, which starts more of Next's dev machinery.
      const page = await request(url + '/static')
      expect(page.statusCode).toBe(200)
      await page.body.text()
      const started = Date.now()
      child.kill('SIGTERM')
      const [code, signal] = await exited
      expect({ code, signal }).toEqual({ code: 0, signal: null })
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(out).not.toContain('terminated by shutdownTimeout')
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      rmSync(copy, { recursive: true, force: true })
    }
  }, 120_000)
})
