// The client build's index: what is served, what never is, and what falls through to the app.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { ClientFiles } from '../src/static-files.ts'

let dir: string
let fastify: FastifyInstance
let base: string
let files: ClientFiles

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'spindle-client-files-'))
  const root = join(dir, 'client')
  mkdirSync(join(root, 'assets'), { recursive: true })
  mkdirSync(join(root, '.well-known'))
  mkdirSync(join(root, 'docs', '.git'), { recursive: true })
  writeFileSync(join(root, 'hello.txt'), 'hello\n')
  writeFileSync(join(root, 'LICENSE'), 'MIT\n')
  writeFileSync(join(root, 'assets', 'app-1234.js'), 'export {}\n')
  writeFileSync(join(root, '.well-known', 'security.txt'), 'Contact: x\n')
  writeFileSync(join(root, '.env'), 'SECRET=1\n')
  writeFileSync(join(root, 'docs', '.git', 'config'), 'secret\n')
  writeFileSync(join(dir, 'outside.txt'), 'outside\n')
  symlinkSync(join(dir, 'outside.txt'), join(root, 'leak.txt'))
  symlinkSync(dir, join(root, 'up'))
  symlinkSync(join(root, 'hello.txt'), join(root, 'alias.txt'))
  symlinkSync(join(root, 'docs'), join(root, 'docs', 'loop'))
  files = await ClientFiles.index(root)
  // Added after the index: not served until the next start.
  writeFileSync(join(root, 'late.txt'), 'late\n')
  fastify = Fastify()
  fastify.get('/*', async (req, reply) => {
    if (await files.serve(req.url.split('?')[0]!, 60, req, reply)) return reply
    return reply.code(404).send('app: ' + req.url)
  })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`
})

afterAll(async () => {
  await fastify?.close()
  rmSync(dir, { recursive: true, force: true })
})

async function get (path: string) {
  const res = await request(base + path)
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

describe('ClientFiles', () => {
  it('indexes the regular files, /.well-known/ and symlinks that stay inside, once', () => {
    // hello.txt, LICENSE, alias.txt, assets/app-1234.js, .well-known/security.txt; docs/loop leads back into docs/ and is walked once.
    expect(files.size).toBe(5)
  })

  it('says nosniff, and sends a file with no known type as application/octet-stream rather than with none', async () => {
    const txt = await get('/hello.txt')
    expect(txt.headers['x-content-type-options']).toBe('nosniff')
    expect(txt.headers['content-type']).toMatch(/^text\/plain/)
    const license = await get('/LICENSE')
    expect(license.body).toBe('MIT\n')
    expect(license.headers['content-type']).toBe('application/octet-stream')
    expect(license.headers['x-content-type-options']).toBe('nosniff')
  })

  it('serves indexed files, also through percent-escapes and doubled slashes', async () => {
    expect((await get('/hello.txt')).body).toBe('hello\n')
    expect((await get('/%68ello.txt')).body).toBe('hello\n')
    expect((await get('//hello.txt')).body).toBe('hello\n')
    expect((await get('/alias.txt')).body).toBe('hello\n')
    expect((await get('/.well-known/security.txt')).body).toBe('Contact: x\n')
    const asset = await get('/assets/app-1234.js')
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect((await get('/hello.txt')).headers['cache-control']).toBe('public, max-age=60')
  })

  it('never serves dotfiles, files behind symlinks out of the folder, or escapes; those reach the app', async () => {
    for (const path of ['/.env', '/docs/.git/config', '/leak.txt', '/up/outside.txt', '/../outside.txt', '/%2e%2e/outside.txt', '/assets/..%2f..%2foutside.txt', '/hello.txt%00', '/assets%5Capp-1234.js']) {
      const res = await get(path)
      expect(res.status, path).toBe(404)
      expect(res.body, path).toMatch(/^app: /)
    }
  })

  it('lets folders, unknown paths and files added after start-up go on to the app', async () => {
    for (const path of ['/', '/assets/', '/docs', '/nope.txt', '/late.txt', '/assets/report', '/assets/app-12.js']) {
      expect((await get(path)).body, path).toBe('app: ' + path)
    }
  })

  it("answers a hashed asset of another build (an old page's chunk after a deploy) with a plain 404, not the app's", async () => {
    for (const path of ['/assets/entry.client-BNnyAUNy.js', '/assets/root-Dop_beSE.css']) {
      const res = await get(path)
      expect(res.status, path).toBe(404)
      expect(res.body, path).toBe('Not Found\n')
      expect(res.headers['cache-control'], path).toBe('no-store')
      expect(res.headers['content-type'], path).toBe('text/plain; charset=utf-8')
    }
  })
})
