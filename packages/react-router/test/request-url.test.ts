import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect } from 'node:net'
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { reactRouterAdapter } from '@spindle/react-router'
import { appDir, buildApp, serverBuild } from './fixtures/build.ts'
import { badHostAnswers } from '../../runtime/test/raw-http.ts'

let fastify: FastifyInstance
let port: number

const client = join(appDir, 'build/client')
const outside = join(appDir, 'build/outside-secret.txt')

beforeAll(async () => {
  buildApp()
  // Files a careless deploy leaves in the client folder, and a link pointing out of it.
  writeFileSync(join(client, '.env'), 'SECRET=dotfile\n')
  mkdirSync(join(client, '.git'), { recursive: true })
  writeFileSync(join(client, '.git/config'), 'secret git config\n')
  writeFileSync(outside, 'secret outside the client folder\n')
  rmSync(join(client, 'linked.txt'), { force: true })
  symlinkSync(outside, join(client, 'linked.txt'))
  fastify = Fastify()
  // The app's own guard, as an auth hook would be: nothing under /api/ without a key.
  fastify.addHook('onRequest', async (request, reply) => {
    if (request.url.startsWith('/api/') && request.headers['x-api-key'] !== 'secret') return reply.code(403).send({ denied: true })
  })
  await fastify.register(reactRouterAdapter, { build: serverBuild })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  port = (fastify.server.address() as { port: number }).port
}, 240_000)

afterAll(async () => {
  await fastify?.close()
  for (const f of ['.env', '.git', 'linked.txt']) rmSync(join(client, f), { recursive: true, force: true })
  rmSync(outside, { force: true })
})

/** Sends the request bytes as written (no client normalises the path or the Host) and returns status and body. */
function raw (head: string, body = ''): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' })
    let data = ''
    socket.on('data', (c: Buffer) => { data += c })
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(data)?.[1] ?? 0)
      resolve({ status, body: data.slice(data.indexOf('\r\n\r\n') + 4) })
    })
    socket.on('error', reject)
    socket.write(head + 'Connection: close\r\n\r\n' + body)
  })
}

describe('the Web Request the app renders is the request Fastify routed', () => {
  it('renders a plain request, and the guarded route only with its key', async () => {
    expect((await raw('GET /about HTTP/1.1\r\nHost: shop.test\r\n')).status).toBe(200)
    expect((await raw('GET /api/data HTTP/1.1\r\nHost: shop.test\r\n')).status).toBe(403)
    const keyed = await raw('GET /api/data HTTP/1.1\r\nHost: shop.test\r\nX-Api-Key: secret\r\n')
    expect(keyed.status).toBe(200)
    expect(keyed.body).toContain('"resource":true')
  })

  it.each([
    ['a Host with a path in it', 'GET /about HTTP/1.1\r\nHost: shop.test/api/data?\r\n'],
    ['a Host with a bare percent sign', 'GET /about HTTP/1.1\r\nHost: %\r\n'],
    ['an empty Host', 'GET /about HTTP/1.1\r\nHost: \r\n'],
    ['dot segments past the guard', 'GET /about/../api/data HTTP/1.1\r\nHost: shop.test\r\n'],
    ['encoded dot segments', 'GET /about/%2e%2E/api/data HTTP/1.1\r\nHost: shop.test\r\n'],
    ['a backslash', 'GET /about\\..\\api/data HTTP/1.1\r\nHost: shop.test\r\n'],
  ])('answers %s with 400 and never renders another route', async (_name, head) => {
    const res = await raw(head)
    expect(res.status).toBe(400)
    expect(res.body).not.toContain('"resource":true')
  })
})

describe('the Host of the request the app renders', () => {
  it('answers 400 SPINDLE_REACT_ROUTER_BAD_REQUEST to a Host a URL refuses or reads as another host: pages, .data requests and actions', async () => {
    expect(await badHostAnswers(port, 'SPINDLE_REACT_ROUTER_BAD_REQUEST', (host) => [
      `GET /about HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      `GET /about.data HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      `POST /form HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 8\r\nConnection: close\r\n\r\nname=ada`,
    ])).toEqual([])
    // The same page for a Host a URL keeps as it is.
    expect((await raw('GET /about HTTP/1.1\r\nHost: shop.test:65535\r\n')).status).toBe(200)
  })

  it('answers 400 SPINDLE_REACT_ROUTER_BAD_REQUEST to a request with two Host lines (RFC 9112 3.2), which Node would read as the first alone', async () => {
    // A proxy in front that keeps the last Host would route or key by shop.test while the
    // app (and the HTTP cache's key) saw evil.test.
    for (const head of [
      'GET /about HTTP/1.1\r\nHost: evil.test\r\nHost: shop.test\r\n',
      'GET /about.data HTTP/1.1\r\nHost: shop.test\r\nhost: shop.test\r\n',
      'POST /form HTTP/1.1\r\nHost: shop.test\r\nHOST: evil.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 8\r\n',
    ]) {
      const res = await raw(head, head.startsWith('POST') ? 'name=ada' : '')
      expect(res.status, head).toBe(400)
      expect(JSON.parse(res.body).code).toBe('SPINDLE_REACT_ROUTER_BAD_REQUEST')
    }
  })
})

describe('the depth of the path the app renders', () => {
  it('answers 414 SPINDLE_REACT_ROUTER_URI_TOO_LONG to a path of more than 256 segments, before React Router matches it', async () => {
    // 7,000 segments: about 2 s of one thread's CPU in React Router's matching.
    for (const path of ['/' + 'a/'.repeat(256), '/' + 'a/'.repeat(7000), '/about' + '/x'.repeat(300) + '.data']) {
      const started = Date.now()
      const res = await raw(`GET ${path} HTTP/1.1\r\nHost: shop.test\r\n`)
      expect(res.status, `${path.length} bytes`).toBe(414)
      expect(JSON.parse(res.body).code).toBe('SPINDLE_REACT_ROUTER_URI_TOO_LONG')
      expect(Date.now() - started).toBeLessThan(500)
    }
    // 256 segments are rendered (a 404 here: no route goes that deep).
    expect((await raw(`GET /${'a/'.repeat(255)}a HTTP/1.1\r\nHost: shop.test\r\n`)).status).toBe(404)
  })
})

describe('client files', () => {
  it('never serves a dotfile, a dot directory or a symlink out of the client folder', async () => {
    for (const path of ['/.env', '/.git/config', '/%2eenv', '/linked.txt']) {
      const res = await raw(`GET ${path} HTTP/1.1\r\nHost: shop.test\r\n`)
      expect(res.body, path).not.toContain('secret')
      expect(res.body, path).not.toContain('SECRET')
    }
  })

  it('gives the immutable policy only to files inside assets/, not to a path that leaves it', async () => {
    const res = await raw('GET /assets/..%2fhello.txt HTTP/1.1\r\nHost: shop.test\r\n')
    const head = await new Promise<string>((resolve, reject) => {
      const socket = connect({ port, host: '127.0.0.1' })
      let data = ''
      socket.on('data', (c: Buffer) => { data += c })
      socket.on('end', () => resolve(data.slice(0, data.indexOf('\r\n\r\n'))))
      socket.on('error', reject)
      socket.write('GET /assets/..%2fhello.txt HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n')
    })
    expect(head.toLowerCase()).not.toContain('immutable')
    expect(res.status).not.toBe(200)
    // The file itself is served, briefly cached, under its own name.
    expect((await raw('GET /hello.txt HTTP/1.1\r\nHost: shop.test\r\n')).status).toBe(200)
  })
})
