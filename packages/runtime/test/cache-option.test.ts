import { afterEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { serve, type ServeOptions } from '@spindle/runtime'
import { startRedis } from '../../cache/test/fleet/redis-server.ts'
import { resolveOptions } from '../src/options.ts'
import { fixture } from './helpers.ts'

const app = fixture('app.js')
const saved = process.env.SPINDLE_CACHE_URL

afterEach(() => {
  if (saved === undefined) delete process.env.SPINDLE_CACHE_URL
  else process.env.SPINDLE_CACHE_URL = saved
})

describe('the cache option and SPINDLE_CACHE_URL', () => {
  it('has no fleet cache when neither is set, takes SPINDLE_CACHE_URL, and lets cache.url win', () => {
    delete process.env.SPINDLE_CACHE_URL
    expect(resolveOptions({ app }, 0).cache).toBeUndefined()
    process.env.SPINDLE_CACHE_URL = 'redis://from-env:6379/0'
    expect(resolveOptions({ app }, 0).cache).toEqual({ url: 'redis://from-env:6379/0', source: 'SPINDLE_CACHE_URL', options: {} })
    expect(resolveOptions({ app, cache: { url: 'valkey://cfg/1', timeout: 50 } }, 0).cache).toEqual({ url: 'valkey://cfg/1', source: 'cache.url', options: { timeout: 50 } })
  })

  it('rejects a bad cache option or URL at start-up, naming where it came from', async () => {
    delete process.env.SPINDLE_CACHE_URL
    expect(() => resolveOptions({ app, cache: 'redis://x' } as unknown as ServeOptions, 0)).toThrow(/^cache must be an object, got "redis:\/\/x"/)
    expect(() => resolveOptions({ app, cache: { url: 1 } } as unknown as ServeOptions, 0)).toThrow(/^cache\.url must be a non-empty string, got 1/)
    const start = (options: Partial<ServeOptions>) => serve({ app, port: 0, controlPort: false, handleSignals: false, ...options })
    await expect(start({ cache: { url: 'http://cache' } })).rejects.toMatchObject({ code: 'SPINDLE_CACHE_INVALID_OPTION', message: expect.stringMatching(/^cache\.url must be a redis:\/\/.*"http:"/) })
    process.env.SPINDLE_CACHE_URL = 'memcached://cache'
    await expect(start({})).rejects.toMatchObject({ code: 'SPINDLE_CACHE_INVALID_OPTION', message: expect.stringMatching(/^SPINDLE_CACHE_URL must be a redis:\/\//) })
    await expect(start({ cache: { url: 'redis://127.0.0.1:1/0', timeot: 5 } })).rejects.toMatchObject({ code: 'SPINDLE_CACHE_INVALID_OPTION', message: 'unknown option "cache.timeot"' })
    await expect(start({ cache: { url: 'redis://127.0.0.1:1/0', timeout: 0 } })).rejects.toMatchObject({ code: 'SPINDLE_CACHE_INVALID_OPTION', message: expect.stringMatching(/^cache\.timeout must be /) })
  })
})

describe('cache.url under serve()', () => {
  it('starts the fleet tier in the main thread, reports it in /metrics and closes it with the server', async () => {
    delete process.env.SPINDLE_CACHE_URL
    const redis = await startRedis()
    try {
      const server = await serve({ app, port: 0, controlPort: 0, workers: 1, handleSignals: false, cache: { url: redis.url, prefix: 'runtime-test:' } })
      try {
        const res = await request(`${server.controlUrl!}/metrics`)
        const text = await res.body.text()
        expect(text).toMatch(/^spindle_cache_fleet_up 1$/m)
        expect(text).toMatch(/^spindle_cache_fleet_breaker_state\{state="closed"\} 1$/m)
      } finally {
        await server.close()
      }
    } finally {
      await redis.stop()
    }
  })
})
