// The pages nextAdapter announces for the runtime's warm-up: a worker that replaces another
// renders the build's static pages before it takes traffic, not only '/'.
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { serve, type SpindleServer } from '@spindle/runtime'
import { staticPages } from '../src/warmup-pages.ts'
import { appDir, buildApp, buildFixture } from './fixtures/build.ts'

const basePathDir = fileURLToPath(new URL('./fixtures/basepath-app/', import.meta.url))
let server: SpindleServer | undefined

beforeAll(() => {
  buildApp()
  buildFixture(basePathDir)
})
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('the build\'s static pages for the warm-up', () => {
  it('lists the App and Pages Router pages without dynamic segments, \'/\' first, and no route handler or page of Next\'s own', () => {
    // The fixture has app/page, app/action, app/static, app/stream, app/api/* route
    // handlers and pages/legacy; Next adds /_not-found, /_global-error, /404 and /_app.
    expect(staticPages(appDir)).toEqual(['/', '/action', '/legacy', '/static', '/stream'])
  })

  it('puts them under the basePath', () => {
    expect(staticPages(basePathDir)).toEqual(['/docs'])
  })

  it('leaves out pages with dynamic segments, in manifests as Next writes them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'spindle-warmup-pages-'))
    try {
      mkdirSync(join(dir, '.next', 'server'), { recursive: true })
      writeFileSync(join(dir, '.next', 'app-path-routes-manifest.json'), JSON.stringify({
        '/page': '/', '/blog/[slug]/page': '/blog/[slug]', '/shop/[...all]/page': '/shop/[...all]', '/about/page': '/about', '/feed/route': '/feed',
      }))
      writeFileSync(join(dir, '.next', 'server', 'pages-manifest.json'), JSON.stringify({
        '/_app': 'pages/_app.js', '/posts/[id]': 'pages/posts/[id].js', '/api/x': 'pages/api/x.js', '/contact': 'pages/contact.html', '/500': 'pages/500.html',
      }))
      writeFileSync(join(dir, '.next', 'routes-manifest.json'), JSON.stringify({ basePath: '' }))
      expect(staticPages(dir)).toEqual(['/', '/about', '/contact'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('finds nothing where there is no build', () => {
    expect(staticPages(fileURLToPath(new URL('.', import.meta.url)))).toEqual([])
  })

  it('warms a replacement worker with them under spindle start\'s runtime: one request each with warmup.requests 1', async () => {
    const logs: Array<{ fields: Record<string, unknown>, msg: string }> = []
    const logger = { info (fields: Record<string, unknown>, msg: string) { logs.push({ fields, msg }) }, warn () {}, error () {} }
    server = await serve({
      app: fileURLToPath(new URL('./fixtures/app-module.js', import.meta.url)),
      workers: 1, port: 0, host: '127.0.0.1', controlPort: 0, handleSignals: false, logger,
      warmup: { requests: 1, timeout: 30_000 },
    })
    await server.restart()
    const report = logs.find((l) => l.msg === 'replacement warmed up before taking traffic')
    // '/' (the default) and the four other pages; the page answers stay 2xx.
    expect(report?.fields).toMatchObject({ requests: 5, failed: 0 })
    expect((await request(server.url + '/static')).statusCode).toBe(200)
  })
})
