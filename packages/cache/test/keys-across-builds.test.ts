import { afterEach, describe, expect, it } from 'vitest'
import { get, start, type Started } from './helpers.ts'

let s: Started | undefined
afterEach(async () => {
  await s?.app.close()
  s = undefined
})

describe('httpCache keys', () => {
  it('an unsafe request invalidates the GET key even when the route adds forwarded headers (as Next.js does)', async () => {
    s = await start((app, count) => {
      app.get('/post', async (_req, reply) => {
        reply.header('cache-control', 'max-age=600')
        return `post ${count('post')}`
      })
      app.post('/post', async (req) => {
        // Next.js sets these on req.headers while it handles the request.
        req.raw.headers['x-forwarded-host'] = req.headers.host
        req.raw.headers['x-forwarded-proto'] = 'http'
        return 'saved'
      })
    })
    await get(`${s.url}/post`)
    expect((await get(`${s.url}/post`)).text).toBe('post 1')
    expect((await get(`${s.url}/post`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(200)
    expect((await get(`${s.url}/post`)).text).toBe('post 2')
  })

  it('carry the build set by setBuildId: a new build never serves the old one\'s pages', async () => {
    s = await start((app, count) => {
      app.get('/', async (_req, reply) => {
        reply.header('cache-control', 'max-age=600')
        return `home ${count('home')}`
      })
    })
    s.app.httpCache.setBuildId('build-a')
    await get(`${s.url}/`)
    expect((await get(`${s.url}/`)).text).toBe('home 1')
    s.app.httpCache.setBuildId('build-b')
    expect((await get(`${s.url}/`)).text).toBe('home 2')
    expect(s.app.httpCache.keyOf({ url: '/', headers: { host: 'a.com' }, encrypted: false })).toContain('build-b')
  })
})
