import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { request } from 'undici'
import { packSpindle } from './helpers/pack.ts'
import { run, start, type Started } from './helpers/processes.ts'

// End to end, as a user would: create-spindle writes each template into a fresh folder
// with the Spindle packages from tarballs of this checkout (SPINDLE_CREATE_PACKAGES),
// installs it from the registry (the package managers' stores make that quick), builds it,
// runs `start` (spindle start) on 2 workers, and checks it over HTTP and in Chromium.

const CHROMIUM = '/usr/bin/chromium'
const PURGE_TOKEN = 'purge-token-for-the-test'
const cli = fileURLToPath(new URL('../bin/create-spindle.js', import.meta.url))
let tarballs: string
let workspace: string
let browser: Browser

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`)
  tarballs = await packSpindle()
  workspace = mkdtempSync(join(tmpdir(), 'create-spindle-'))
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  for (const dir of [workspace, tarballs]) if (dir) rmSync(dir, { recursive: true, force: true })
})

/** Scaffolds, installs and builds one app; returns its folder. */
async function createApp (name: string, flags: string[], pm: 'npm' | 'pnpm'): Promise<string> {
  const out = await run(process.execPath, [cli, name, ...flags, '--package-manager', pm, '--yes'], workspace, { SPINDLE_CREATE_PACKAGES: tarballs })
  expect(out).toContain('Dependencies installed')
  expect(out).toContain(`${pm === 'npm' ? 'npm run' : 'pnpm'} start`)
  const dir = join(workspace, name)
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  expect(pkg.scripts.start).toBe('spindle start')
  expect(pkg.name).toBe(name)
  for (const file of ['Dockerfile', 'README.md', '.gitignore', 'k8s/deployment.yaml', 'k8s/service.yaml', 'k8s/hpa.yaml']) {
    expect(existsSync(join(dir, file)), file).toBe(true)
  }
  await run(pm, ['run', 'build'], dir)
  return dir
}

/**
 * The `start` script's command (`spindle start`, checked in createApp) on 2 workers and
 * free ports, run from node_modules/.bin as the package manager would, but without it in
 * between: SIGTERM then reaches spindle itself, and its exit code is the test's.
 */
function startApp (dir: string, env: NodeJS.ProcessEnv = {}): Promise<Started> {
  const flags = ['--workers', '2', '--host', '127.0.0.1', '--port', '0', '--control-port', '0']
  return start(join(dir, 'node_modules', '.bin', 'spindle'), ['start', ...flags], dir, env)
}

async function get (url: string, init: { method?: 'GET' | 'POST', headers?: Record<string, string>, body?: string } = {}) {
  // A browser's User-Agent: React Router buffers whole pages for bots.
  const headers = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/140', ...init.headers }
  const res = await request(url, { method: init.method ?? 'GET', headers, body: init.body })
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

async function expectReady (app: Started): Promise<void> {
  if (app.controlUrl === undefined) throw new Error('spindle started without its control server')
  expect((await get(app.controlUrl! + '/healthz')).status).toBe(200)
  const ready = JSON.parse((await get(app.controlUrl! + '/readyz')).body)
  expect(ready).toMatchObject({ status: 'ready', readyWorkers: 2 })
}

/**
 * A new page that notes every response the browser got an error status for, the icon
 * Chromium asks for on its own (/favicon.ico, unless the page names one) included: a first
 * visit to a new app must not meet a 404, which React Router also logs with a stack trace.
 */
async function newPage (): Promise<{ page: Page, failed: string[] }> {
  const page = await browser.newPage()
  const failed: string[] = []
  page.on('response', (response) => { if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`) })
  // The icon's request is the browser's own, not the page's: only the console tells of its 404.
  page.on('console', (message) => { if (message.type() === 'error') failed.push(message.text()) })
  return { page, failed }
}

/** Once the browser has stopped loading, no request it made got an error, and nothing was logged as one. */
async function expectNoFailedRequests (page: Page, failed: string[]): Promise<void> {
  await page.waitForLoadState('networkidle')
  expect(failed).toEqual([])
}

/** Loads `path` in Chromium and clicks the counter, which only counts once React has hydrated. */
async function expectHydrated (url: string): Promise<void> {
  const { page, failed } = await newPage()
  try {
    await page.goto(url)
    // A click before React hydrates the button is lost (the load event can come first on a
    // busy machine): click until a click counts, for up to 15 s.
    const end = Date.now() + 15_000
    for (;;) {
      await page.click('#counter')
      try {
        await page.waitForSelector('text=/clicked [1-9][0-9]* times/', { timeout: 500 })
        break
      } catch (err) {
        if (Date.now() > end) throw err
      }
    }
    await expectNoFailedRequests(page, failed)
  } finally {
    await page.close()
  }
}

const renderId = (html: string): string | undefined => /data-render-id="([^"]+)"/.exec(html)?.[1]

async function until<T> (read: () => Promise<T>, done: (value: T) => boolean, ms = 5000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > end) return value
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('npm create spindle: each template installs, builds, starts on 2 workers and hydrates', () => {
  it('next (TypeScript, pnpm): a page, a shared \'use cache\' component, the revalidate route, and the standalone image layout', async () => {
    const dir = await createApp('next-app', ['--template', 'next', '--typescript'], 'pnpm')
    const app = await startApp(dir, { REVALIDATE_TOKEN: 'test-token' })
    try {
      await expectReady(app)
      const home = await get(app.url + '/')
      expect(home.status).toBe(200)
      expect(home.body).toContain('<h1>next-app</h1>')
      expect((await get(app.url + '/healthcheck')).body).toBe('{"ok":true}')

      // One render for every worker: new connections land on either thread.
      const first = renderId((await get(app.url + '/cached')).body)
      expect(first).toBeDefined()
      for (let i = 0; i < 6; i++) expect(renderId((await get(app.url + '/cached')).body)).toBe(first)

      const refused = await get(app.url + '/api/revalidate?tag=greeting', { method: 'POST' })
      expect(refused.status).toBe(401)
      const revalidated = await get(app.url + '/api/revalidate?tag=greeting', { method: 'POST', headers: { authorization: 'Bearer test-token' } })
      expect(JSON.parse(revalidated.body)).toEqual({ revalidated: 'greeting' })
      const next = await until(async () => renderId((await get(app.url + '/cached')).body), (id) => id !== first)
      expect(next).not.toBe(first)

      await expectHydrated(app.url + '/')
    } finally {
      expect(await app.stop()).toBe(0)
    }

    // What the Dockerfile ships: scripts/image.mjs lays out the standalone tree, the app and
    // the server's packages; spindle start serves it with no other node_modules around.
    const image = join(workspace, 'next-image')
    await run('node', ['scripts/image.mjs', image], dir)
    expect(existsSync(join(image, 'node_modules', 'next'))).toBe(false)
    const served = await start(join(image, 'node_modules', '.bin', 'spindle'), ['start', '--workers', '2', '--host', '127.0.0.1', '--port', '0', '--control-port', '0'], image)
    try {
      await expectReady(served)
      const home = await get(served.url + '/')
      expect(home.body).toContain('<h1>next-app</h1>')
      const chunk = /\/_next\/static\/[^"]+\.js/.exec(home.body)?.[0]
      expect((await get(served.url + chunk)).headers['cache-control']).toBe('public, max-age=31536000, immutable')
      const id = renderId((await get(served.url + '/cached')).body)
      expect(renderId((await get(served.url + '/cached')).body)).toBe(id)
      await expectHydrated(served.url + '/')
    } finally {
      expect(await served.stop()).toBe(0)
    }
  }, 300_000)

  it('react-router (JavaScript, pnpm): SSR, a page cached by httpCache for every worker', async () => {
    const dir = await createApp('rr-app', ['--template', 'react-router', '--js'], 'pnpm')
    const app = await startApp(dir, { SPINDLE_CACHE_PURGE_TOKEN: PURGE_TOKEN })
    try {
      await expectReady(app)
      const home = await get(app.url + '/')
      expect(home.status).toBe(200)
      expect(home.body).toContain('<h1>rr-app</h1>')

      const miss = await get(app.url + '/cached')
      expect(miss.status).toBe(200)
      expect(miss.headers['x-cache']).toBe('MISS')
      const id = renderId(miss.body)
      expect(id).toBeDefined()
      for (let i = 0; i < 4; i++) {
        const hit = await get(app.url + '/cached')
        expect(hit.headers['x-cache']).toBe('HIT')
        expect(renderId(hit.body)).toBe(id)
      }
      // Purged by its Cache-Tag on the control port: the next request renders again.
      const purge = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"tags":["cached"]}' } as const
      expect((await get(app.controlUrl! + '/cache/purge', purge)).status).toBe(401)
      const purged = await get(app.controlUrl! + '/cache/purge', { ...purge, headers: { ...purge.headers, authorization: `Bearer ${PURGE_TOKEN}` } })
      expect(purged.status).toBe(200)
      const again = await get(app.url + '/cached')
      expect(again.headers['x-cache']).toBe('MISS')
      expect(renderId(again.body)).not.toBe(id)

      await expectHydrated(app.url + '/')
      // React Router logs every request no route matches, with a stack trace.
      expect(app.output()).not.toContain('No route matches')
    } finally {
      expect(await app.stop()).toBe(0)
    }

    // `dev` (spindle dev): the source through Vite inside Fastify, no build involved.
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts.dev).toBe('spindle dev')
    const dev = await start(join(dir, 'node_modules', '.bin', 'spindle'), ['dev', '--port', '0'], dir)
    try {
      expect(dev.controlUrl).toBeUndefined()
      const home = await get(dev.url + '/')
      expect(home.status).toBe(200)
      expect(home.body).toContain('<h1>rr-app</h1>')
      expect(home.body).toContain('href="/app/routes/home.jsx"') // the source, not a build
      expect((await get(dev.url + '/cached')).headers['x-cache']).toBeUndefined()
      await expectHydrated(dev.url + '/')
    } finally {
      expect(await dev.stop()).toBe(0)
    }
  }, 300_000)

  it('fastify (TypeScript, npm): the API and a page whose script calls it', async () => {
    const dir = await createApp('fastify-app', ['--template', 'fastify', '--ts'], 'npm')
    const app = await startApp(dir)
    try {
      await expectReady(app)
      const hello = JSON.parse((await get(app.url + '/api/hello')).body)
      expect(hello).toMatchObject({ hello: 'world' })
      expect(hello.thread).toBeGreaterThan(0)

      const { page, failed } = await newPage()
      try {
        await page.goto(app.url + '/')
        await page.waitForSelector('text=/world, from worker thread \\d+/', { timeout: 15_000 })
        expect(await page.title()).toBe('fastify-app')
        await expectNoFailedRequests(page, failed)
      } finally {
        await page.close()
      }
    } finally {
      expect(await app.stop()).toBe(0)
    }
  }, 300_000)
})
