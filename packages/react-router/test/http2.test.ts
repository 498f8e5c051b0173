import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect } from 'node:http2'
import Fastify from 'fastify'
import { reactRouterAdapter } from '@spindle/react-router'
import { buildApp, serverBuild } from './fixtures/build.ts'
import { h2Get } from '../../runtime/test/raw-http.ts'

// An app that opts into HTTP/2 (Fastify's http2: true): the adapter in both forms.
const servers: Array<{ close: () => Promise<unknown> }> = []
beforeAll(() => { buildApp() }, 240_000)
afterAll(async () => { for (const s of servers) await s.close() })

async function serve (threads: number): Promise<string> {
  const app = Fastify({ http2: true })
  servers.push(app)
  await app.register(reactRouterAdapter, { build: serverBuild, threads })
  return await app.listen({ port: 0, host: '127.0.0.1' })
}

describe.each([0, 2])('reactRouterAdapter over HTTP/2, threads: %i', (threads) => {
  it('renders pages and resource routes, the host taken from :authority', async () => {
    const url = await serve(threads)
    const session = connect(url)
    try {
      const page = await h2Get(session, '/', { ':authority': 'app.test' })
      expect(page.status).toBe(200)
      expect(page.body).toContain('<html')
      const data = await h2Get(session, '/api/data', { ':authority': 'app.test' })
      expect(data.status).toBe(200)
      const seen = await h2Get(session, '/request-headers', { ':authority': 'app.test', 'user-agent': 'h2-client', cookie: 'a=1' })
      expect(seen.status).toBe(201)
      expect(JSON.parse(seen.body)).toMatchObject({ userAgent: 'h2-client', cookie: 'a=1' })
      // Connection-specific fields the app set are dropped (HTTP/2 has none), not a failed stream.
      const hop = await h2Get(session, '/hop', { ':authority': 'app.test' })
      expect(hop.status).toBe(200)
      expect(hop.body).toBe('hop')
      expect(hop.headers['keep-alive']).toBeUndefined()
    } finally {
      session.close()
    }
  }, 60_000)
})
