import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'
import { serve, type SpindleServer } from '@spindle/runtime'
import { buildApp } from './fixtures/build.ts'

const CHROMIUM = '/usr/bin/chromium'
let server: SpindleServer
let browser: Browser

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`)
  buildApp()
  server = await serve({
    app: fileURLToPath(new URL('./fixtures/app-module.js', import.meta.url)),
    workers: 2, port: 0, host: '127.0.0.1', controlPort: false, handleSignals: false,
  })
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  })
}, 240_000)

afterAll(async () => {
  await browser?.close()
  await server?.close()
})

describe('a React Router app through Spindle in Chromium', () => {
  it('hydrates, and navigates client-side to a route whose loader runs through the adapter', async () => {
    const page = await browser.newPage()
    const dataRequests: string[] = []
    page.on('request', (req) => { if (req.url().includes('.data')) dataRequests.push(req.url()) })
    await page.goto(server.url + '/')
    await page.waitForSelector('html[data-hydrated]', { timeout: 30_000 })
    await page.click('#counter')
    await page.waitForSelector('text=clicked 1 times', { timeout: 10_000 })
    await page.evaluate(() => { (globalThis as unknown as { marker: string }).marker = 'same document' })
    await page.click('#to-about')
    await page.waitForSelector('#about', { timeout: 10_000 })
    expect(await page.textContent('#about')).toBe('about loader data')
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: string }).marker)).toBe('same document')
    // The loader ran on the server through a single-fetch request.
    expect(dataRequests.some((u) => u.includes('/about.data'))).toBe(true)
    await page.close()
  })
})
