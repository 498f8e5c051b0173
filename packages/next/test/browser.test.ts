import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { chromium, type Browser, type Page } from 'playwright-core'
import { serve, type SpindleServer } from '@spindle/runtime'
import { nextAdapter } from '@spindle/next'
import { appDir, buildApp } from './fixtures/build.ts'

const CHROMIUM = '/usr/bin/chromium'
let server: SpindleServer
let browser: Browser
let pooled: FastifyInstance
let pooledUrl: string

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`)
  buildApp()
  server = await serve({
    app: fileURLToPath(new URL('./fixtures/app-module.js', import.meta.url)),
    workers: 2, port: 0, host: '127.0.0.1', controlPort: false, handleSignals: false,
  })
  // The same app in pool mode: one Fastify, Next in 2 pool threads.
  pooled = Fastify()
  await pooled.register(nextAdapter, { dir: appDir, threads: 2 })
  pooledUrl = await pooled.listen({ port: 0, host: '127.0.0.1' })
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--no-first-run', '--disable-sync'],
  })
})

afterAll(async () => {
  await browser?.close()
  await server?.close()
  await pooled?.close()
})

async function hydrateAndNavigate (page: Page, base: string): Promise<void> {
  await page.goto(base + '/')
  await page.waitForSelector('html[data-hydrated]', { timeout: 30_000 })
  await page.click('#counter')
  await page.click('#counter')
  // Only a hydrated page reacts to clicks.
  await page.waitForSelector('text=clicked 2 times', { timeout: 10_000 })
  await page.evaluate(() => { (globalThis as unknown as { marker: string }).marker = 'same document' })
  await page.click('#to-static')
  await page.waitForSelector('#static-title', { timeout: 10_000 })
  expect(page.url()).toBe(base + '/static')
  // A client-side navigation keeps the document (and so the marker) alive.
  expect(await page.evaluate(() => (globalThis as unknown as { marker?: string }).marker)).toBe('same document')
}

describe('a Next.js page through Spindle in Chromium', () => {
  it('hydrates, and navigates client-side without a full page load', async () => {
    const page = await browser.newPage()
    await hydrateAndNavigate(page, server.url)
    await page.close()
  })

  it('does the same with Next in pool threads (threads: 2)', async () => {
    const page = await browser.newPage()
    await hydrateAndNavigate(page, pooledUrl)
    await page.close()
  })
})
