import { afterEach, describe, expect, it } from 'vitest'
import { get, sleep, start, type Started } from './helpers.ts'

let s: Started | undefined
afterEach(async () => {
  await s?.app.close()
  s = undefined
})

describe('httpCache: storing and reuse (RFC 9111)', () => {
  it('stores a fresh response once and answers hits with Age, without running the route', async () => {
    s = await start((app, count) => {
      app.get('/page', async (_req, reply) => {
        reply.header('cache-control', 'max-age=60').header('x-extra', 'kept')
        return `render ${count('page')}`
      })
    })
    const first = await get(`${s.url}/page`)
    expect(first.headers.get('x-cache')).toBe('MISS')
    await sleep(1100)
    const second = await get(`${s.url}/page`)
    expect(second.text).toBe('render 1')
    expect(second.headers.get('x-cache')).toBe('HIT')
    expect(second.headers.get('x-extra')).toBe('kept')
    expect(second.headers.get('content-type')).toBe(first.headers.get('content-type'))
    expect(Number(second.headers.get('age'))).toBeGreaterThanOrEqual(1)
    expect(s.runs.get('page')).toBe(1)
    const stats = s.app.httpCache.stats()
    expect(stats.hits).toBe(1)
    expect(stats.misses).toBe(1)
    expect(stats.entries).toBe(1)
  })

  it('never stores no-store, private, Set-Cookie, or Vary: * responses, nor requests with Authorization', async () => {
    s = await start((app, count) => {
      const route = (path: string, headers: Record<string, string>): void => {
        app.get(path, async (_req, reply) => { reply.headers({ 'cache-control': 'max-age=60', ...headers }); return `${path} ${count(path)}` })
      }
      route('/no-store', { 'cache-control': 'no-store, max-age=60' })
      route('/private', { 'cache-control': 'private, max-age=60' })
      route('/cookie', { 'set-cookie': 'session=secret' })
      route('/vary-star', { vary: '*' })
      route('/auth', {})
      route('/auth-public', { 'cache-control': 'public, max-age=60' })
    })
    for (const path of ['/no-store', '/private', '/cookie', '/vary-star']) {
      await get(s.url + path)
      const again = await get(s.url + path)
      expect(again.text, path).toBe(`${path} 2`)
    }
    expect((await get(`${s.url}/cookie`)).headers.get('set-cookie')).toBe('session=secret')
    const auth = { headers: { authorization: 'Bearer a' } }
    await get(`${s.url}/auth`, auth)
    expect((await get(`${s.url}/auth`, auth)).text).toBe('/auth 2')
    expect((await get(`${s.url}/auth`)).text).toBe('/auth 3')
    // public (or, for Authorization alone, s-maxage) makes it shareable, as RFC 9111 3.5 says.
    await get(`${s.url}/auth-public`, auth)
    expect((await get(`${s.url}/auth-public`, auth)).text).toBe('/auth-public 1')
  })

  it('keeps one variant per Vary value and matches them exactly', async () => {
    s = await start((app, count) => {
      app.get('/v', async (req, reply) => {
        reply.header('cache-control', 'max-age=60').header('vary', 'Accept-Language')
        return `${String(req.headers['accept-language'])} ${count('v')}`
      })
    })
    const en = { headers: { 'accept-language': 'en' } }
    const fr = { headers: { 'accept-language': 'fr' } }
    expect((await get(`${s.url}/v`, en)).text).toBe('en 1')
    expect((await get(`${s.url}/v`, fr)).text).toBe('fr 2')
    expect((await get(`${s.url}/v`, en)).text).toBe('en 1')
    expect((await get(`${s.url}/v`, fr)).text).toBe('fr 2')
    expect((await get(`${s.url}/v`)).text).toBe('undefined 3')
  })

  it('answers conditional requests with 304 from the cache, and HEAD from the stored GET', async () => {
    s = await start((app, count) => {
      app.get('/e', async (_req, reply) => {
        count('e')
        reply.header('cache-control', 'max-age=60').header('etag', '"v1"').header('last-modified', 'Sun, 01 Nov 2026 00:00:00 GMT')
        return 'body'
      })
    })
    await get(`${s.url}/e`)
    const inm = await get(`${s.url}/e`, { headers: { 'if-none-match': 'W/"v1"' } })
    expect(inm.status).toBe(304)
    expect(inm.headers.get('etag')).toBe('"v1"')
    expect((await get(`${s.url}/e`, { headers: { 'if-none-match': '"v0"' } })).status).toBe(200)
    expect((await get(`${s.url}/e`, { headers: { 'if-modified-since': 'Mon, 02 Nov 2026 00:00:00 GMT' } })).status).toBe(304)
    const head = await get(`${s.url}/e`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('x-cache')).toBe('HIT')
    expect(head.headers.get('content-length')).toBe('4')
    expect(head.text).toBe('')
    const range = await get(`${s.url}/e`, { headers: { range: 'bytes=1-2' } })
    expect(range.status).toBe(206)
    expect(range.text).toBe('od')
    expect(range.headers.get('content-range')).toBe('bytes 1-2/4')
    expect(s.runs.get('e')).toBe(1)
  })

  it('revalidates a stale response with its validators and keeps the stored body on 304', async () => {
    const seen: Array<string | undefined> = []
    s = await start((app, count) => {
      app.get('/r', async (req, reply) => {
        count('r')
        seen.push(req.headers['if-none-match'])
        reply.header('cache-control', 'max-age=2').header('etag', '"r1"').header('x-version', String(seen.length))
        if (req.headers['if-none-match'] === '"r1"') return reply.code(304).send()
        return 'full body'
      })
    })
    expect((await get(`${s.url}/r`)).text).toBe('full body')
    await sleep(2100)
    const revalidated = await get(`${s.url}/r`)
    expect(revalidated.status).toBe(200)
    expect(revalidated.text).toBe('full body')
    expect(revalidated.headers.get('x-cache')).toBe('REVALIDATED')
    expect(revalidated.headers.get('x-version')).toBe('2')
    expect(seen).toEqual([undefined, '"r1"'])
    // The 304 refreshed the stored response: fresh again.
    expect((await get(`${s.url}/r`)).headers.get('x-cache')).toBe('HIT')
  })

  it('serves stale-while-revalidate at once and refreshes in the background once', async () => {
    s = await start((app, count) => {
      app.get('/swr', async (_req, reply) => {
        const n = count('swr')
        if (n > 1) await sleep(300)
        // Date has one-second resolution, so a stored response can be up to 1 s old at once: max-age=2 leaves room.
        reply.header('cache-control', 'max-age=2, stale-while-revalidate=30')
        return `v${n}`
      })
    })
    await get(`${s.url}/swr`)
    await sleep(2100)
    const stale = await Promise.all(Array.from({ length: 5 }, () => get(`${s!.url}/swr`)))
    expect(stale.map((r) => r.text)).toEqual(['v1', 'v1', 'v1', 'v1', 'v1'])
    expect(stale.every((r) => r.headers.get('x-cache') === 'STALE')).toBe(true)
    await sleep(600)
    expect((await get(`${s.url}/swr`)).text).toBe('v2')
    expect(s.runs.get('swr'), JSON.stringify(stale.map((r) => [r.text, r.headers.get('x-cache')]))).toBe(2)
  })

  it('serves stale on errors where allowed, never past must-revalidate', async () => {
    let fail = false
    s = await start((app, count) => {
      app.get('/sie', async (_req, reply) => {
        count('sie')
        if (fail) throw new Error('origin down')
        reply.header('cache-control', 'max-age=1, stale-if-error=60')
        return 'good'
      })
      app.get('/mr', async (_req, reply) => {
        if (fail) return reply.code(503).send('down')
        reply.header('cache-control', 'max-age=1, must-revalidate')
        return 'good'
      })
    }, { staleOnError: 0 })
    await get(`${s.url}/sie`)
    await get(`${s.url}/mr`)
    await sleep(1100)
    fail = true
    const sie = await get(`${s.url}/sie`)
    expect([sie.status, sie.text, sie.headers.get('x-cache')]).toEqual([200, 'good', 'STALE'])
    const mr = await get(`${s.url}/mr`)
    expect([mr.status, mr.text]).toEqual([503, 'down'])
  })

  it('drops stored responses after a successful unsafe request to the URL or its Location', async () => {
    s = await start((app, count) => {
      app.get('/item', async (_req, reply) => { reply.header('cache-control', 'max-age=60'); return `item ${count('item')}` })
      app.get('/list', async (_req, reply) => { reply.header('cache-control', 'max-age=60'); return `list ${count('list')}` })
      app.post('/item', async (_req, reply) => reply.header('location', '/list').code(201).send('ok'))
      app.delete('/item', async (_req, reply) => reply.code(500).send('failed'))
    })
    await get(`${s.url}/item`)
    await get(`${s.url}/list`)
    await get(`${s.url}/item`, { method: 'DELETE' })
    expect((await get(`${s.url}/item`)).text).toBe('item 1')
    await get(`${s.url}/item`, { method: 'POST' })
    expect((await get(`${s.url}/item`)).text).toBe('item 2')
    expect((await get(`${s.url}/list`)).text).toBe('list 2')
  })

  it('caches what a framework writes to the raw response after hijacking', async () => {
    s = await start((app, count) => {
      app.get('/raw', (_req, reply) => {
        reply.hijack()
        const n = count('raw')
        reply.raw.setHeader('cache-control', 's-maxage=60')
        reply.raw.writeHead(200, { 'content-type': 'text/html', 'x-framework': 'raw' })
        reply.raw.write('<p>')
        setTimeout(() => reply.raw.end(`streamed ${n}</p>`), 20)
      })
    })
    expect((await get(`${s.url}/raw`)).text).toBe('<p>streamed 1</p>')
    const hit = await get(`${s.url}/raw`)
    expect([hit.text, hit.headers.get('x-cache'), hit.headers.get('x-framework'), hit.headers.get('content-type')]).toEqual(['<p>streamed 1</p>', 'HIT', 'raw', 'text/html'])
    expect(s.runs.get('raw')).toBe(1)
  })

  it('stores the fields a raw writeHead sent: a list given to writeHead replaces what was set before', async () => {
    s = await start((app, count) => {
      app.get('/raw-list', (_req, reply) => {
        reply.hijack()
        const n = count('raw-list')
        reply.raw.setHeader('content-type', 'text/html')
        reply.raw.setHeader('cache-control', 'max-age=60')
        reply.raw.writeHead(200, ['Content-Type', 'text/plain', 'Cache-Control', 'max-age=60', 'X-Part', 'a', 'X-Part', 'b'])
        reply.raw.end(`<b>listed ${n}</b>`)
      })
    })
    const miss = await get(`${s.url}/raw-list`)
    const hit = await get(`${s.url}/raw-list`)
    for (const got of [miss, hit]) {
      expect([got.text, got.headers.get('content-type'), got.headers.get('cache-control'), got.headers.get('x-part')]).toEqual(['<b>listed 1</b>', 'text/plain', 'max-age=60', 'a, b'])
    }
    expect(hit.headers.get('x-cache')).toBe('HIT')
  })

  it('answers only-if-cached misses with 504 and honours request max-age=0 and no-cache', async () => {
    s = await start((app, count) => {
      app.get('/q', async (_req, reply) => { reply.header('cache-control', 'max-age=60'); return `q ${count('q')}` })
    })
    expect((await get(`${s.url}/q`, { headers: { 'cache-control': 'only-if-cached' } })).status).toBe(504)
    await get(`${s.url}/q`)
    expect((await get(`${s.url}/q`, { headers: { 'cache-control': 'only-if-cached' } })).text).toBe('q 1')
    expect((await get(`${s.url}/q`, { headers: { 'cache-control': 'no-cache' } })).text).toBe('q 2')
    expect((await get(`${s.url}/q`, { headers: { 'cache-control': 'max-age=0' } })).text).toBe('q 3')
    expect((await get(`${s.url}/q`)).text).toBe('q 3')
  })
})

describe('httpCache: keys and poisoning', () => {
  it('forwarded headers never change what others are served', async () => {
    // trustProxy makes request.host follow X-Forwarded-Host: the classic poisoning setup.
    s = await start((app, count) => {
      app.get('/link', async (req, reply) => {
        count('link')
        reply.header('cache-control', 'max-age=60')
        return `<a href="${req.protocol}://${req.host}/next">`
      })
    }, {}, { trustProxy: true })
    const honest = `<a href="http://${new URL(s.url).host}/next">`
    const forgeries: Array<Record<string, string>> = [{ 'x-forwarded-host': 'evil.example' }, { 'x-forwarded-proto': 'https' }, { forwarded: 'host=evil.example' }, { 'x-original-url': '/admin' }]
    for (const forged of forgeries) {
      const poisoned = await get(`${s.url}/link`, { headers: forged })
      expect(poisoned.text === honest, JSON.stringify(forged)).toBe(Object.keys(forged)[0] === 'forwarded' || Object.keys(forged)[0] === 'x-original-url')
      expect((await get(`${s.url}/link`)).text, JSON.stringify(forged)).toBe(honest)
    }
    // Method overrides are never cached or answered from the cache.
    const override = await get(`${s.url}/link`, { headers: { 'x-http-method-override': 'POST' } })
    expect(override.headers.get('x-cache')).toBe('BYPASS')
  })

  it('keeps query strings apart and accepts a custom key', async () => {
    s = await start((app, count) => {
      app.get('/k', async (req, reply) => { reply.header('cache-control', 'max-age=60'); return `${JSON.stringify(req.query)} ${count('k')}` })
    }, { key: (req) => `custom:${req.url.split('?')[0]}` })
    await get(`${s.url}/k?a=1`)
    // The custom key ignores the query: both share one entry.
    expect((await get(`${s.url}/k?a=2`)).text).toBe('{"a":"1"} 1')
    expect(s.app.httpCache.keyOf({ url: '/k?x', headers: {}, encrypted: false })).toBe('custom:/k')
  })
})

describe('httpCache: purge', () => {
  it('purges by key, tag and path prefix', async () => {
    s = await start((app, count) => {
      app.get('/blog/*', async (req, reply) => {
        reply.header('cache-control', 'max-age=60').header('cache-tag', `post-${req.url.split('/')[2]}, blog`)
        return `${req.url} ${count(req.url)}`
      })
      app.get('/about', async (_req, reply) => { reply.header('cache-control', 'max-age=60'); return `about ${count('about')}` })
    }, { statusHeader: false })
    const urls = ['/blog/1', '/blog/2', '/about']
    for (const u of urls) await get(s.url + u)
    expect((await get(`${s.url}/about`)).headers.get('x-cache')).toBeNull()

    s.app.httpCache.purge({ tags: ['post-1'] })
    expect((await get(`${s.url}/blog/1`)).text).toBe('/blog/1 2')
    expect((await get(`${s.url}/blog/2`)).text).toBe('/blog/2 1')
    s.app.httpCache.purge({ paths: ['/blog'] })
    expect((await get(`${s.url}/blog/2`)).text).toBe('/blog/2 2')
    expect((await get(`${s.url}/about`)).text).toBe('about 1')
    const key = s.app.httpCache.keyOf({ url: '/about', headers: { host: new URL(s.url).host }, encrypted: false })
    expect(key).toBe(`${s.url}/about`)
    expect(s.app.httpCache.purge({ keys: [key] }).deleted).toBe(1)
    expect((await get(`${s.url}/about`)).text).toBe('about 2')
    expect(() => s!.app.httpCache.purge({})).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_PURGE' }))
    // A tag spelled as the store's own path tag is refused, not read as a purge of every path.
    expect(() => s!.app.httpCache.purge({ tags: ['\0path:/'] })).toThrow(expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_PURGE' }))
    expect((await get(`${s.url}/about`)).text).toBe('about 2')
  })
})
