import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect } from 'node:http2'
import Fastify from 'fastify'
import { nextAdapter } from '@spindle/next'
import { appDir, buildApp } from './fixtures/build.ts'
import { h2Get } from '../../runtime/test/raw-http.ts'

// An app that opts into HTTP/2 (Fastify's http2: true): the adapter in both forms.
const servers: Array<{ close: () => Promise<unknown> }> = []
beforeAll(() => { buildApp() }, 300_000)
afterAll(async () => { for (const s of servers) await s.close() })

async function serve (threads: number): Promise<string> {
  const app = Fastify({ http2: true })
  servers.push(app)
  await app.register(nextAdapter, { dir: appDir, threads })
  return await app.listen({ port: 0, host: '127.0.0.1' })
}

describe.each([0, 2])('nextAdapter over HTTP/2, threads: %i', (threads) => {
  it('renders pages and route handlers, compressed or not', async () => {
    const url = await serve(threads)
    const session = connect(url)
    try {
      const page = await h2Get(session, '/static', { ':authority': 'app.test' })
      expect(page.status).toBe(200)
      expect(page.body).toContain('<html')
      // Next compresses what the client accepts: the head leaves before the first compressed bytes.
      const gzip = await h2Get(session, '/static', { ':authority': 'app.test', 'accept-encoding': 'gzip' })
      expect(gzip.status).toBe(200)
      const seen = await h2Get(session, '/api/request', { ':authority': 'app.test', 'user-agent': 'h2-client', cookie: 'a=1' })
      expect(seen.status).toBe(200)
      expect(JSON.parse(seen.body)).toMatchObject({ userAgent: 'h2-client', cookie: 'a=1' })
    } finally {
      session.close()
    }
  }, 120_000)
})
