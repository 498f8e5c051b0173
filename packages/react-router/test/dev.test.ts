// `spindle dev` with `reactRouterAdapter({ dev: true })`: Vite's dev server inside Fastify,
// in a runtime worker, with HMR in Chromium. It runs on a copy of the fixture (Vite writes
// its caches there and the test edits a route), placed next to the fixture so that the
// packages resolve from this one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { upgradeRequest } from '../../runtime/test/raw-http.ts'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { request } from 'undici'
import { appDir } from './fixtures/build.ts'

const CHROMIUM = '/usr/bin/chromium'
const require = createRequire(import.meta.url)
const cli = join(dirname(require.resolve('@spindle/runtime/package.json')), 'dist/cli.js')

let dir: string
let child: ChildProcess | undefined
let browser: Browser
let base: string

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`)
  dir = mkdtempSync(join(appDir, '..', '.dev-'))
  cpSync(appDir, dir, { recursive: true, filter: (src) => !/[/\\](build|\.react-router|node_modules)$/.test(src) })
  // The server entry as the guide has it: dev mode when spindle dev sets NODE_ENV.
  writeFileSync(join(dir, 'app.js'), [
    "import { reactRouterAdapter } from '@spindle/react-router'",
    'export const options = { logger: false }',
    'export default async function app (fastify) {',
    "  fastify.get('/own', async () => ({ route: 'own' }))",
    "  await fastify.register(reactRouterAdapter, process.env.NODE_ENV === 'development'",
    '    ? { dev: true }',
    "    : { build: new URL('./build/server/index.js', import.meta.url).pathname })",
    '}',
  ].join('\n'))
  child = spawn(process.execPath, [cli, 'dev', '--port', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'test' } })
  let out = ''
  child.stdout!.on('data', (chunk: Buffer) => { out += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { out += chunk.toString() })
  const deadline = Date.now() + 60_000
  while (!/url\s+http/.test(out) && child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  base = /url\s+(http\S+)/.exec(out)?.[1] ?? ''
  if (!base) throw new Error(`spindle dev did not start:\n${out}`)
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** Clicks the counter once React has hydrated the page, again if a reload lost the click. */
async function clickUntil (page: Page, text: string): Promise<void> {
  const deadline = Date.now() + 60_000
  for (;;) {
    await page.waitForSelector('html[data-hydrated]', { timeout: 30_000 })
    await page.click('#counter')
    try {
      await page.waitForSelector(`text=${text}`, { timeout: 5_000 })
      return
    } catch (err) {
      if (Date.now() > deadline) throw err
    }
  }
}


/** Opens Vite's HMR websocket as its client does: the token from /@vite/client, protocol vite-hmr. */
async function openHmr (): Promise<{ ws: WebSocket, first: Promise<string> }> {
  const client = await (await request(base + '/@vite/client')).body.text()
  const token = /const wsToken = "([^"]+)"/.exec(client)?.[1]
  const ws = new WebSocket(`${base.replace('http', 'ws')}/?token=${token}`, 'vite-hmr')
  const first = new Promise<string>((resolve) => ws.addEventListener('message', (event) => resolve(String(event.data)), { once: true }))
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true })
    ws.addEventListener('error', () => reject(new Error('the HMR websocket was refused')), { once: true })
  })
  return { ws, first }
}

describe('spindle dev with reactRouterAdapter({ dev: true })', () => {
  it('serves the source through Vite on 127.0.0.1, next to the user routes, with no build', async () => {
    expect(new URL(base).hostname).toBe('127.0.0.1')
    expect(existsSync(join(dir, 'build'))).toBe(false)
    const page = await request(base + '/')
    const html = await page.body.text()
    expect(page.statusCode).toBe(200)
    expect(html).toContain('hello from the loader')
    // The dev manifest, with React Router's HMR runtime.
    expect(html).toContain('virtual:react-router/inject-hmr-runtime')
    expect(await (await request(base + '/own')).body.json()).toEqual({ route: 'own' })
  })

  it('hydrates, and shows an edit to a route in the open page without a reload', async () => {
    const page = await browser.newPage()
    const file = join(dir, 'app', 'routes', 'home.jsx')
    try {
      // Vite optimizes the dependencies it meets on the first load and may reload the page
      // once for them: a page that has loaded and hydrated once comes first.
      const warm = await browser.newPage()
      await warm.goto(base + '/', { waitUntil: 'networkidle' })
      await warm.waitForSelector('html[data-hydrated]', { timeout: 30_000 })
      await warm.close()
      await page.goto(base + '/')
      await clickUntil(page, 'clicked 1 times')
      await page.evaluate(() => { (globalThis as unknown as { marker: string }).marker = 'before the edit' })

      writeFileSync(file, readFileSync(file, 'utf8').replace('clicked {count} times', 'pressed {count} times'))
      // Fast Refresh swaps the component and keeps its state: the count is still 1.
      await page.waitForSelector('text=pressed 1 times', { timeout: 30_000 })
      expect(await page.evaluate(() => (globalThis as unknown as { marker?: string }).marker)).toBe('before the edit')
      // The server renders the edited route too.
      expect(await (await request(base + '/')).body.text()).toContain('pressed ')
    } finally {
      await page.close()
    }
  }, 90_000)

  it('gives Vite its HMR websocket, and answers other requests with an Upgrade header like any request', async () => {
    const { ws, first } = await openHmr()
    try {
      expect(JSON.parse(await first)).toEqual({ type: 'connected' })
      // curl --http2 sends `Upgrade: h2c`: the user's route and the pages answer it as HTTP/1.1.
      const own = await upgradeRequest(base, '/own', 'h2c')
      expect(own.status).toBe('HTTP/1.1 200 OK')
      expect(own.body).toContain('"route":"own"')
      // A websocket upgrade nothing takes: the page itself.
      const page = await upgradeRequest(base, '/', 'websocket')
      expect(page.status).toBe('HTTP/1.1 200 OK')
      expect(page.body).toContain('hello from the loader')
    } finally {
      ws.close()
    }
  }, 30_000)

  // Last: it stops the server the tests share.
  it('stops at once on SIGTERM with an HMR websocket open, as with a browser tab open', async () => {
    const { ws } = await openHmr()
    const closed = once(ws, 'close')
    const started = Date.now()
    child!.kill('SIGTERM')
    const [code] = await once(child!, 'exit') as [number | null]
    // Without the websocket it takes well under a second; held by it, the whole
    // shutdownTimeout (10 s) and a drain warning.
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(code).toBe(0)
    await closed
  }, 30_000)
})
