// `output: 'standalone'`: the fixture is built with `next build`, and its standalone tree is
// laid out in a temporary folder the way an image holds it (docs/next.md): the tree, the
// browser chunks and public/ copied into it, a server entry next to it, and Spindle's
// packages in the image's own node_modules. Next and React come from the tree's node_modules
// only: the temporary folder is outside the workspace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import { request } from 'undici'
import { nextAdapter } from '@spindle/next'
import { buildFixture } from './fixtures/build.ts'

const require = createRequire(import.meta.url)
const cli = join(dirname(require.resolve('@spindle/runtime/package.json')), 'dist/cli.js')
const fixture = fileURLToPath(new URL('./fixtures/standalone-app/', import.meta.url))

let image: string
let relativeAppDir: string
let appDir: string
let child: ChildProcess | undefined
let base: string

beforeAll(async () => {
  buildFixture(fixture)
  image = mkdtempSync(join(tmpdir(), 'spindle-standalone-'))
  // Where the app sits inside the tree: the root for a single app, its folder from the
  // workspace root in a monorepo (as here).
  relativeAppDir = (JSON.parse(readFileSync(join(fixture, '.next', 'required-server-files.json'), 'utf8')) as { relativeAppDir: string }).relativeAppDir
  cpSync(join(fixture, '.next', 'standalone'), join(image, 'standalone'), { recursive: true, verbatimSymlinks: true })
  appDir = join(image, 'standalone', relativeAppDir)
}, 240_000)

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await once(child, 'exit')
  }
  if (image) rmSync(image, { recursive: true, force: true })
})

async function get (path: string) {
  // A new connection per request, so the kernel may pick either worker.
  const res = await request(base + path, { reset: true })
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('nextAdapter on a standalone build', () => {
  it('refuses a tree that the browser chunks were not copied into, naming the fix', async () => {
    const fastify = Fastify()
    try {
      await expect(fastify.register(nextAdapter, { dir: appDir }).ready()).rejects.toMatchObject({ code: 'SPINDLE_NEXT_STANDALONE_NO_STATIC' })
    } finally {
      await fastify.close()
    }
  })

  it('serves pages, route handlers, chunks and public files from the tree under spindle start on 2 workers', async () => {
    // What `next build` leaves out of the tree, copied in as for Next's own server.js.
    cpSync(join(fixture, '.next', 'static'), join(appDir, '.next', 'static'), { recursive: true })
    cpSync(join(fixture, 'public'), join(appDir, 'public'), { recursive: true })
    // The image's own packages: the server entry needs @spindle/next, the config file
    // @spindle/cache (the runtime is the CLI).
    mkdirSync(join(image, 'node_modules', '@spindle'), { recursive: true })
    for (const name of ['next', 'cache']) {
      symlinkSync(dirname(require.resolve(`@spindle/${name}/package.json`)), join(image, 'node_modules', '@spindle', name))
    }
    // One store for every worker, which the cache handlers traced into the tree open.
    writeFileSync(join(image, 'spindle.config.js'), [
      "import { createSharedStore } from '@spindle/cache'",
      "export default { app: './app.js', shared: { spindleCache: createSharedStore({ maxBytes: 16 * 1024 * 1024 }).buffer } }",
    ].join('\n'))
    writeFileSync(join(image, 'app.js'), [
      "import { nextAdapter } from '@spindle/next'",
      'export const options = { logger: false }',
      'export default async function app (fastify) {',
      `  await fastify.register(nextAdapter, { dir: new URL(${JSON.stringify(`./standalone/${relativeAppDir}`)}, import.meta.url).pathname })`,
      '}',
    ].join('\n'))

    child = spawn(process.execPath, [cli, 'start', '--workers', '2', '--port', '0', '--control-port', '0', '--host', '127.0.0.1'], {
      cwd: image, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
    })
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => { out += chunk.toString() })
    child.stderr!.on('data', (chunk: Buffer) => { out += chunk.toString() })
    const deadline = Date.now() + 60_000
    while (!/url\s+http/.test(out) && child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    base = /url\s+(http\S+)/.exec(out)?.[1] ?? ''
    expect(base, out).not.toBe('')

    const home = await get('/')
    expect(home.status).toBe(200)
    expect(home.body).toContain('standalone home')

    const threads = new Set<number>()
    for (let i = 0; i < 100 && threads.size < 2; i++) {
      const res = await get('/api/hello')
      expect(res.status).toBe(200)
      const body = JSON.parse(res.body) as { hello: string, thread: number }
      expect(body.hello).toBe('standalone')
      threads.add(body.thread)
    }
    expect(threads.size).toBe(2)

    const chunk = /\/_next\/static\/[^"]+\.js/.exec(home.body)?.[0]
    expect(chunk).toBeDefined()
    const asset = await get(chunk!)
    expect(asset.status).toBe(200)
    expect(asset.headers['cache-control']).toContain('immutable')

    const file = await get('/hello.txt')
    expect(file.status).toBe(200)
    expect(file.body).toContain('a public file of the standalone app')
  }, 120_000)

  it("loads withSpindle's cache handlers from the tree: both workers read one 'use cache' entry from the shared store", async () => {
    const seen = new Map<string, string>()
    for (let i = 0; i < 100 && seen.size < 2; i++) {
      const res = await get('/cached')
      expect(res.status).toBe(200)
      const thread = /thread:(?:<!-- -->)?(\d+)/.exec(res.body)?.[1]
      const cached = /cached:(?:<!-- -->)?([0-9a-f-]{36})/.exec(res.body)?.[1]
      expect(thread, res.body).toBeDefined()
      expect(cached, res.body).toBeDefined()
      seen.set(thread!, cached!)
    }
    expect(seen.size).toBe(2)
    expect(new Set(seen.values()).size).toBe(1)
  })
})

