import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { get, parseRaw, sendRaw, sleep, start, type Started } from './helpers.ts'

let s: Started | undefined
afterEach(async () => {
  await s?.app.close()
  s = undefined
})

/** A request with its target written as given (HTTP clients drop a fragment and turn '\\' into '/'); its status, X-Cache and body. */
async function rawGet (base: string, target: string, headers = '', method = 'GET'): Promise<{ status: number, cache: string, body: string }> {
  const { status, cache, body } = parseRaw(await sendRaw(Number(new URL(base).port), `${method} ${target} HTTP/1.1\r\nhost: app.com\r\nconnection: close\r\n${method === 'POST' ? 'content-length: 0\r\n' : ''}${headers}\r\n`))
  return { status, cache, body }
}

/** A request with a Host header of our choosing (fetch and undici's request set their own). */
async function withHost (base: string, path: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number, text: string }> {
  const res = await request(base + path, { headers: { host, ...headers } })
  return { status: res.statusCode, text: await res.body.text() }
}

describe('httpCache: the key cannot be poisoned', () => {
  it('refuses a Host that is not host[:port] with 400 before the route runs', async () => {
    s = await start((app, count) => {
      app.get('/*', async (req, reply) => {
        reply.header('cache-control', 'max-age=60')
        return `${req.url} ${count('page')}`
      })
      app.get('/echo', async (req, reply) => {
        reply.header('cache-control', 'max-age=60')
        return `<a href="https://${req.headers.host}/login"> ${count('echo')}`
      })
    })
    for (const host of ['app.com/blog', 'app.com?x', 'x@app.com', 'app.com:99999', 'app.com:8x', '%', 'a b']) {
      expect((await withHost(s.url, '/post-1', host)).status, host).toBe(400)
    }
    expect(s.runs.get('page')).toBeUndefined()
    // Case and the default port do not make another entry, and a Host spelled so fills none:
    // the app reads it as spelled, and a page that echoes it must not reach everyone.
    expect((await withHost(s.url, '/echo', 'App.COM:80')).text).toBe('<a href="https://App.COM:80/login"> 1')
    expect((await withHost(s.url, '/echo', 'app.com')).text).toBe('<a href="https://app.com/login"> 2')
    expect((await withHost(s.url, '/echo', 'app.com')).text).toBe('<a href="https://app.com/login"> 2')
    // Answered from the entry of the canonical spelling.
    expect((await withHost(s.url, '/echo', 'APP.com')).text).toBe('<a href="https://app.com/login"> 2')
    expect((await withHost(s.url, '/echo', 'app.com:80')).text).toBe('<a href="https://app.com/login"> 2')
    expect((await withHost(s.url, '/echo', 'app.com:8080')).text).toBe('<a href="https://app.com:8080/login"> 3')
  })

  it('answers only allowedHosts', async () => {
    s = await start((app) => {
      app.get('/', async () => 'ok')
    }, { allowedHosts: ['app.com', '*.example.org'] })
    expect((await withHost(s.url, '/', 'app.com:8080')).status).toBe(200)
    expect((await withHost(s.url, '/', 'www.example.org')).status).toBe(200)
    expect((await withHost(s.url, '/', 'evil.com')).status).toBe(400)
    expect((await withHost(s.url, '/', 'example.org')).status).toBe(400)
  })

  it('keys and tags a path in canonical form: /%64eep cannot escape a purge of /deep', async () => {
    s = await start((app, count) => {
      app.get('/deep', async (_req, reply) => {
        reply.header('cache-control', 'max-age=600')
        return `deep ${count('deep')}`
      })
    })
    expect((await get(`${s.url}/%64eep`)).text).toBe('deep 1')
    expect((await get(`${s.url}/%64eep`)).text).toBe('deep 2')
    expect((await get(`${s.url}/deep`)).text).toBe('deep 3')
    expect((await get(`${s.url}/deep`)).text).toBe('deep 3')
    s.app.httpCache.purge({ paths: ['/deep'] })
    expect((await get(`${s.url}/deep`)).text).toBe('deep 4')
  })

  it('leaves a path spelled otherwise than its canonical form to the route: not every router decodes it (Next.js answers /%78 404)', async () => {
    s = await start((app, count) => {
      // A catch-all route with a router of its own that matches the target as it came.
      app.get('/*', async (req, reply) => {
        if (req.raw.url !== '/x') return await reply.code(404).send('not found')
        reply.header('cache-control', 'public, max-age=600')
        return `x ${count('x')}`
      })
    }, { statusHeader: 'x-cache' })
    expect((await rawGet(s.url, '/x')).body).toBe('x 1')
    for (const target of ['/%78', '/%2e/x', '/a/../x']) {
      const res = await rawGet(s.url, target)
      expect([res.status, res.cache, res.body], target).toEqual([404, 'BYPASS', 'not found'])
    }
    expect((await rawGet(s.url, '/x')).cache).toBe('HIT')
  })

  it('leaves a target with a fragment or a backslash to the route: a revalidation would parse it into another URL', async () => {
    s = await start((app, count) => {
      app.get('/*', async (req, reply) => {
        reply.header('cache-control', 'max-age=600')
        return `${req.raw.url} ${JSON.stringify(req.query)} ${count('page')}`
      })
    }, { statusHeader: 'x-cache' })
    // Fastify reads what follows '#' as the query; a URL parser drops it, and turns '\\' into '/'.
    for (const target of ['/page#q=x', '/a\\b?z=1']) {
      const first = await rawGet(s.url, target)
      const again = await rawGet(s.url, target, 'cache-control: max-age=0\r\n')
      const third = await rawGet(s.url, target)
      expect([first.cache, again.cache, third.cache], target).toEqual(['BYPASS', 'BYPASS', 'BYPASS'])
      for (const res of [first, again, third]) expect(res.body.startsWith(`${target} `), `${target}: ${res.body}`).toBe(true)
    }
    expect((await rawGet(s.url, '/page#q=x')).body).toContain('{"q":"x"}')
    // The plain target is a resource of its own, answered and stored as usual.
    expect((await rawGet(s.url, '/page')).cache).toBe('MISS')
    expect((await rawGet(s.url, '/page')).cache).toBe('HIT')
  })

  it('a POST whose target reads as another host\'s URL (//other/x) is answered by its route and drops no other entry', async () => {
    s = await start((app, count) => {
      app.get('/x', async (_req, reply) => {
        reply.header('cache-control', 'max-age=600')
        return `x ${count('x')}`
      })
      app.post('/*', async (req) => `posted ${req.url}`)
    }, { statusHeader: 'x-cache' })
    expect((await rawGet(s.url, '/x')).body).toBe('x 1')
    for (const target of ['//other/x', '//', 'http://other/x']) {
      const posted = await rawGet(s.url, target, '', 'POST')
      expect([posted.status, posted.body], target).toEqual([200, `posted ${target}`])
    }
    expect(await rawGet(s.url, '/x')).toEqual({ status: 200, cache: 'HIT', body: 'x 1' })
    // A POST to the URL itself drops it.
    await rawGet(s.url, '/x', '', 'POST')
    expect((await rawGet(s.url, '/x')).body).toBe('x 2')
  })
})

describe('httpCache: responses for one user are not shared', () => {
  it('a request with a Cookie or a credentialHeaders header neither fills nor hits a shared entry', async () => {
    s = await start((app, count) => {
      app.get('/me', async (req, reply) => {
        reply.header('cache-control', 'max-age=60').header('last-modified', new Date(Date.now() - 86_400_000).toUTCString())
        return `${String(req.headers.cookie ?? req.headers['x-api-key'] ?? 'anonymous')} ${count('me')}`
      })
    }, { credentialHeaders: ['X-Api-Key'] })
    expect((await get(`${s.url}/me`, { headers: { cookie: 'session=alice' } })).text).toBe('session=alice 1')
    expect((await get(`${s.url}/me`)).text).toBe('anonymous 2')
    expect((await get(`${s.url}/me`)).text).toBe('anonymous 2')
    expect((await get(`${s.url}/me`, { headers: { cookie: 'session=bob' } })).text).toBe('session=bob 3')
    expect((await get(`${s.url}/me`, { headers: { 'x-api-key': 'k1' } })).text).toBe('k1 4')
    expect((await get(`${s.url}/me`, { headers: { authorization: 'Bearer x' } })).text).toBe('anonymous 5')
  })

  it('a page answered to a Cookie with s-maxage is not stored: only public shares it (Next.js sends s-maxage on pages its proxy gates)', async () => {
    s = await start((app, count) => {
      app.get('/members', async (req, reply) => {
        if (req.headers.cookie === undefined) return reply.code(307).header('location', '/login').send()
        reply.header('cache-control', 's-maxage=31536000')
        return `members only ${count('members')}`
      })
      app.get('/home', async (req, reply) => {
        reply.header('cache-control', 's-maxage=600')
        return `home for ${String(req.headers.cookie ?? 'anyone')} ${count('home')}`
      })
    })
    const member = { headers: { cookie: 'session=alice' } }
    expect((await get(`${s.url}/members`)).status).toBe(307)
    expect((await get(`${s.url}/members`, member)).text).toBe('members only 1')
    const anonymous = await get(`${s.url}/members`)
    expect(anonymous.status).toBe(307)
    expect(anonymous.text).not.toContain('members only')
    // A client that allows any staleness and forbids the origin gets no member's page either.
    const onlyCached = await get(`${s.url}/members`, { headers: { 'cache-control': 'only-if-cached, max-stale' } })
    expect(onlyCached.status).toBe(504)
    // What anonymous clients filled is still shared with signed-in ones (the app said s-maxage).
    expect((await get(`${s.url}/home`)).text).toBe('home for anyone 1')
    expect((await get(`${s.url}/home`, member)).text).toBe('home for anyone 1')
  })

  it('only-if-cached with max-stale gives a request with a Cookie no entry that is not shared with credentials', async () => {
    s = await start((app, count) => {
      app.get('/greet', async (req, reply) => {
        reply.header('cache-control', 'max-age=1').header('last-modified', new Date(Date.now() - 86_400_000).toUTCString())
        return `hello ${String(req.headers.cookie ?? 'guest')} ${count('greet')}`
      })
    })
    expect((await get(`${s.url}/greet`)).text).toBe('hello guest 1')
    await sleep(1100)
    const stale = { 'cache-control': 'only-if-cached, max-stale' }
    expect((await get(`${s.url}/greet`, { headers: stale })).text).toBe('hello guest 1')
    expect((await get(`${s.url}/greet`, { headers: { ...stale, cookie: 'name=z' } })).status).toBe(504)
  })

  it("a signed-in user's request does not revalidate a shared entry: her 304's fields never reach anyone else", async () => {
    s = await start((app, count) => {
      app.get('/article', async (req, reply) => {
        count('article')
        const user = /session=(\w+)/.exec(req.headers.cookie ?? '')?.[1]
        if (user) reply.header('cache-control', 'private, no-store').header('x-user', user).header('x-csrf-token', `csrf-of-${user}`)
        else reply.header('cache-control', 'public, max-age=1, stale-while-revalidate=60')
        reply.header('etag', '"v1"')
        if (req.headers['if-none-match'] === '"v1"') return reply.code(304).send()
        return `article for ${user ?? 'anyone'}`
      })
    })
    expect((await get(`${s.url}/article`)).text).toBe('article for anyone')
    await sleep(1100)
    const alice = await get(`${s.url}/article`, { headers: { cookie: 'session=alice' } })
    // Stale within stale-while-revalidate: she may get the shared page, and no refresh runs as her.
    expect(alice.text).toBe('article for anyone')
    await sleep(200)
    const anonymous = await get(`${s.url}/article`)
    expect(anonymous.headers.get('x-user')).toBeNull()
    expect(anonymous.headers.get('x-csrf-token')).toBeNull()
    // Past stale-while-revalidate too: her request runs the route as a miss, and nothing of it is stored.
    s.app.httpCache.purge({ paths: ['/article'] })
    expect((await get(`${s.url}/article`)).text).toBe('article for anyone')
    await sleep(1100)
    const bob = await get(`${s.url}/article`, { headers: { cookie: 'session=bob', 'cache-control': 'max-age=0' } })
    expect(bob.text).toBe('article for bob')
    expect(bob.headers.get('x-user')).toBe('bob')
    const after = await get(`${s.url}/article`)
    expect(after.headers.get('x-user')).toBeNull()
    expect(after.headers.get('x-csrf-token')).toBeNull()
  }, 15_000)

  it('never lets the app see the header that marks its own revalidations, nor one a client sends by that name', async () => {
    s = await start((app, count) => {
      app.get('/echo', async (req, reply) => {
        reply.header('cache-control', 'max-age=1, stale-while-revalidate=60')
        return `${count('echo')} ${req.raw.rawHeaders.join('|')} ${Object.keys(req.headers).join('|')}`
      })
    })
    const guessed = await get(`${s.url}/echo`, { headers: { 'x-spindle-cache-internal': 'guess' } })
    expect(guessed.text).not.toContain('x-spindle-cache-internal')
    await sleep(1100)
    // Stale: served, and refreshed in the background through the cache's own request.
    await get(`${s.url}/echo`)
    await sleep(300)
    const refreshed = await get(`${s.url}/echo`)
    expect(refreshed.text.startsWith('2 ')).toBe(true)
    expect(refreshed.text.toLowerCase()).not.toContain('x-spindle-cache-internal')
  }, 15_000)

  it('shares what says public or s-maxage, and routes with config.cache.public', async () => {
    s = await start((app, count) => {
      app.get('/public', async (_req, reply) => {
        reply.header('cache-control', 'public, max-age=60')
        return `public ${count('public')}`
      })
      app.get('/opted', { config: { cache: { public: true } } }, async (_req, reply) => {
        reply.header('cache-control', 'max-age=60')
        return `opted ${count('opted')}`
      })
      app.get('/off', { config: { cache: false } }, async (_req, reply) => {
        reply.header('cache-control', 'max-age=60')
        return `off ${count('off')}`
      })
    })
    const alice = { headers: { cookie: 'session=alice' } }
    expect((await get(`${s.url}/public`, alice)).text).toBe('public 1')
    expect((await get(`${s.url}/public`)).text).toBe('public 1')
    expect((await get(`${s.url}/opted`, alice)).text).toBe('opted 1')
    expect((await get(`${s.url}/opted`)).text).toBe('opted 1')
    await get(`${s.url}/off`)
    expect((await get(`${s.url}/off`)).text).toBe('off 2')
  })
})

describe('httpCache: Authorization, s-maxage and must-revalidate (RFC 9111 3.5)', () => {
  it('shares what answers Authorization only with public or s-maxage, never with must-revalidate alone; a Cookie takes public alone', async () => {
    s = await start((app, count) => {
      app.get('/doc', async (req, reply) => {
        reply.header('cache-control', 'max-age=60, must-revalidate')
        return `${String(req.headers.authorization ?? req.headers.cookie ?? 'anonymous')} ${count('doc')}`
      })
      app.get('/plain', async (req, reply) => {
        reply.header('cache-control', 'max-age=60')
        return `${String(req.headers.authorization ?? 'anonymous')} ${count('plain')}`
      })
      app.get('/shared', async (req, reply) => {
        reply.header('cache-control', 's-maxage=60')
        return `${String(req.headers.authorization ?? 'anonymous')} ${count('shared')}`
      })
    })
    // must-revalidate alone does not share what answered Authorization: a per-user API's
    // `max-age=60, must-revalidate` would hand one user's data to everyone.
    expect((await get(`${s.url}/doc`, { headers: { authorization: 'Bearer a' } })).text).toBe('Bearer a 1')
    expect((await get(`${s.url}/doc`)).text).toBe('anonymous 2')
    expect((await get(`${s.url}/doc`, { headers: { authorization: 'Bearer b' } })).text).toBe('Bearer b 3')
    expect((await get(`${s.url}/doc`, { headers: { cookie: 'session=c' } })).text).toBe('session=c 4')
    // s-maxage does (RFC 9111 3.5: a directive only shared caches read), for Authorization alone.
    expect((await get(`${s.url}/shared`, { headers: { authorization: 'Bearer a' } })).text).toBe('Bearer a 1')
    expect((await get(`${s.url}/shared`)).text).toBe('Bearer a 1')
    // Authorization beside a Cookie is a cookie-authenticated request: not stored.
    s.app.httpCache.purge({ paths: ['/shared'] })
    expect((await get(`${s.url}/shared`, { headers: { authorization: 'Bearer a', cookie: 'session=a' } })).text).toBe('Bearer a 2')
    expect((await get(`${s.url}/shared`)).text).toBe('anonymous 3')
    // Without either nothing answered to Authorization is stored.
    expect((await get(`${s.url}/plain`, { headers: { authorization: 'Bearer a' } })).text).toBe('Bearer a 1')
    expect((await get(`${s.url}/plain`)).text).toBe('anonymous 2')
  })
})

describe('httpCache: a POST response that names its own URL (RFC 9110 9.3.3)', () => {
  it('stores it for the GETs that follow only with Content-Location of the same URL, explicit freshness, a 200 and no credentials', async () => {
    let location: string | undefined = ''
    let cacheControl = 'max-age=60'
    let status = 200
    s = await start((app, count) => {
      app.get('/item', async (_req, reply) => {
        reply.header('cache-control', 'max-age=60')
        return `get ${count('get')}`
      })
      app.post('/item', async (req, reply) => {
        reply.code(status).header('cache-control', cacheControl)
        if (location !== undefined) reply.header('content-location', location)
        if (cacheControl === '') reply.header('last-modified', new Date(Date.now() - 86_400_000).toUTCString())
        return `post ${String(req.body)} ${count('post')}`
      })
    })
    const post = (body: string, headers: Record<string, string> = {}) => get(`${s!.url}/item`, { method: 'POST', body, headers: { 'content-type': 'text/plain', ...headers } })
    const kept = async (): Promise<string> => (await get(`${s!.url}/item`)).text

    location = '/item'
    expect((await post('a')).text).toBe('post a 1')
    expect(await kept()).toBe('post a 1')
    location = `http://127.0.0.1:${new URL(s.url).port}/item`
    expect((await post('b')).text).toBe('post b 2')
    expect(await kept()).toBe('post b 2')

    // Each of these invalidates the stored response (a successful POST) and stores nothing.
    const refused: Array<[string, () => void, Record<string, string>?]> = [
      ['no Content-Location', () => { location = undefined }],
      ['another URL', () => { location = '/item?x=1' }],
      ['another host', () => { location = 'http://evil.example/item' }],
      ['heuristic freshness only', () => { location = '/item'; cacheControl = '' }],
      ['a 201', () => { cacheControl = 'max-age=60'; status = 201 }],
      ['a Cookie on the POST', () => { status = 200 }, { cookie: 'session=alice' }],
      ['no-store on the POST', () => {}, { 'cache-control': 'no-store' }],
    ]
    let gets = 0
    for (const [why, set, headers] of refused) {
      set()
      await post(why, headers)
      gets++
      expect(await kept(), why).toBe(`get ${gets}`)
      // The next GET is answered from what that GET stored, not from the POST.
      expect(await kept(), why).toBe(`get ${gets}`)
    }
  })

  it('a route with config.cache false keeps its POST responses out', async () => {
    s = await start((app, count) => {
      app.get('/off', async () => `get ${count('get')}`)
      app.post('/off', { config: { cache: false } }, async (_req, reply) => {
        reply.header('cache-control', 'max-age=60').header('content-location', '/off')
        return `post ${count('post')}`
      })
    })
    await get(`${s.url}/off`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } })
    expect((await get(`${s.url}/off`)).text).toBe('get 1')
  })
})

describe('httpCache: errors', () => {
  it('stores an error only with explicit freshness, and no longer than maxErrorTtl', async () => {
    s = await start((app, count) => {
      app.get('/gone', async (_req, reply) => {
        reply.code(404).header('last-modified', new Date(Date.now() - 86_400_000).toUTCString())
        return `gone ${count('gone')}`
      })
      app.get('/broken', async (_req, reply) => {
        reply.code(500).header('cache-control', 'max-age=3600')
        return `broken ${count('broken')}`
      })
    }, { maxErrorTtl: 1 })
    await get(`${s.url}/gone`)
    expect((await get(`${s.url}/gone`)).text).toBe('gone 2')
    await get(`${s.url}/broken`)
    expect((await get(`${s.url}/broken`)).text).toBe('broken 1')
    await sleep(2100)
    expect((await get(`${s.url}/broken`)).text).toBe('broken 2')
  })

  it('a 5xx never replaces a good entry', async () => {
    let fail = false
    s = await start((app, count) => {
      app.get('/page', async (_req, reply) => {
        const n = count('page')
        if (fail) {
          reply.code(503).header('cache-control', 'max-age=60')
          return `down ${n}`
        }
        reply.header('cache-control', 'max-age=1, must-revalidate')
        return `page ${n}`
      })
    })
    expect((await get(`${s.url}/page`)).text).toBe('page 1')
    fail = true
    await sleep(2100)
    // must-revalidate forbids serving it stale: this client sees the error, the entry stays.
    expect((await get(`${s.url}/page`)).status).toBe(503)
    fail = false
    const again = await get(`${s.url}/page`)
    expect(again.text).toBe('page 3')
    expect((await get(`${s.url}/page`)).text).toBe('page 3')
  }, 15_000)

  it('one request revalidates a stale entry; the others that find it stale at once wait and are served its answer', async () => {
    s = await start((app, count) => {
      app.get('/hot', async (_req, reply) => {
        const n = count('hot')
        await sleep(200)
        reply.header('cache-control', 'max-age=1')
        return `hot ${n}`
      })
    })
    expect((await get(`${s.url}/hot`)).text).toBe('hot 1')
    await sleep(1100)
    const all = await Promise.all(Array.from({ length: 20 }, () => get(`${s!.url}/hot`)))
    expect(new Set(all.map((r) => r.text))).toEqual(new Set(['hot 2']))
    expect(s.runs.get('hot')).toBe(2)
    // A request with credentials is not held behind another's revalidation: it runs the route.
    await sleep(1100)
    const [plain, alice] = await Promise.all([get(`${s.url}/hot`), get(`${s.url}/hot`, { headers: { cookie: 'session=alice' } })])
    expect(new Set([plain.text, alice.text])).toEqual(new Set(['hot 3', 'hot 4']))
  }, 15_000)

  it("an uncacheable answer that varies on a header of the request (Next.js's RSC redirect) does not turn coalescing off for the URL", async () => {
    s = await start((app, count) => {
      app.get('/page', async (req, reply) => {
        if (req.headers.rsc !== undefined) return reply.code(307).header('location', '/page').header('vary', 'RSC').send()
        count('page')
        await sleep(200)
        reply.header('cache-control', 'max-age=60').header('vary', 'RSC')
        return 'page'
      })
    })
    expect((await get(`${s.url}/page`, { headers: { rsc: '1' } })).status).toBe(307)
    const all = await Promise.all(Array.from({ length: 10 }, () => get(`${s!.url}/page`)))
    expect(all.every((r) => r.text === 'page')).toBe(true)
    expect(s.runs.get('page')).toBe(1)
  })

  it('a shed 503 does not turn coalescing off for the key', async () => {
    let shed = true
    s = await start((app, count) => {
      app.get('/slow', async (_req, reply) => {
        count('slow')
        if (shed) return reply.code(503).header('retry-after', '1').send('busy')
        await sleep(300)
        reply.header('cache-control', 'max-age=60')
        return 'slow'
      })
    })
    expect((await get(`${s.url}/slow`)).status).toBe(503)
    shed = false
    const all = await Promise.all([1, 2, 3, 4].map(() => get(`${s!.url}/slow`)))
    expect(all.map((r) => r.text)).toEqual(['slow', 'slow', 'slow', 'slow'])
    // One render for the four concurrent requests, after the one 503.
    expect(s.runs.get('slow')).toBe(2)
  })

  it('when the request producing a key is abandoned mid-render, one of its waiters renders it and the others wait for that one', async () => {
    s = await start((app, count) => {
      app.get('/slow', async (_req, reply) => {
        const n = count('slow')
        await sleep(300)
        reply.header('cache-control', 'max-age=60')
        return `slow ${n}`
      })
    }, { statusHeader: 'x-cache' })
    // The first client leaves 100 ms in: what its render answers reaches no one and is not stored.
    const ac = new AbortController()
    const leader = request(`${s.url}/slow`, { signal: ac.signal }).catch(() => undefined)
    await sleep(50)
    const waiters = [1, 2, 3].map(() => get(`${s!.url}/slow`))
    await sleep(50)
    ac.abort()
    await leader
    const answers = await Promise.all(waiters)
    // One render for the client that left and one for the three that waited (not one each).
    expect(answers.map((r) => r.text)).toEqual(['slow 2', 'slow 2', 'slow 2'])
    expect(answers.map((r) => r.headers.get('x-cache')).sort()).toEqual(['HIT', 'HIT', 'MISS'])
    expect(s.runs.get('slow')).toBe(2)
  })
})
