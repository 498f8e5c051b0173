import { describe, expect, it } from 'vitest'
import { parseCacheUrl, resolveFleetOptions } from '@spindle/cache'

describe('fleet options', () => {
  it('parses redis, rediss, valkey and valkeys URLs with database, user and password', () => {
    expect(parseCacheUrl('redis://cache:6380/2')).toEqual({ host: 'cache', port: 6380, db: 2, tls: false })
    expect(parseCacheUrl('valkey://valkey')).toEqual({ host: 'valkey', port: 6379, db: 0, tls: false })
    expect(parseCacheUrl('rediss://u:p%40ss@[::1]:7000/0')).toEqual({ host: '::1', port: 7000, db: 0, username: 'u', password: 'p@ss', tls: true })
    expect(parseCacheUrl('valkeys://h/1').tls).toBe(true)
  })

  it('rejects bad URLs and options, naming them', () => {
    const invalid = (re: RegExp) => expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_OPTION', message: expect.stringMatching(re) })
    expect(() => parseCacheUrl('http://h', 'SPINDLE_CACHE_URL')).toThrow(invalid(/^SPINDLE_CACHE_URL must be a redis:\/\/.* got the scheme "http:"/))
    expect(() => parseCacheUrl('redis://h/x')).toThrow(invalid(/^url must end in a database number/))
    expect(() => parseCacheUrl('')).toThrow(invalid(/^url must be a redis:\/\//))
    expect(() => resolveFleetOptions({ url: 'redis://h', timeout: 0 })).toThrow(invalid(/^timeout must be an integer from 1/))
    expect(() => resolveFleetOptions({ url: 'redis://h', urls: 1 } as never)).toThrow(invalid(/^unknown option "urls"$/))
    expect(() => resolveFleetOptions({} as never)).toThrow(invalid(/^url must be a redis:\/\/, rediss:\/\/, valkey:\/\/ or valkeys:\/\/ URL, got undefined$/))
    expect(() => resolveFleetOptions({ url: 'redis://h', prefix: 'p'.repeat(129) })).toThrow(invalid(/^prefix must be a string of at most 128 characters, got "p+"$/))
    expect(() => resolveFleetOptions({ url: 'redis://h', compressAbove: -1 })).toThrow(invalid(/^compressAbove must be an integer from 0 to 2147483648, got -1$/))
    expect(() => resolveFleetOptions({ url: 'redis://h', reconnectDelay: 100, maxReconnectDelay: 50 })).toThrow(invalid(/^maxReconnectDelay \(50\) must be at least reconnectDelay \(100\)$/))
    expect(() => resolveFleetOptions('redis://h' as never)).toThrow(invalid(/^options must be an object, got "redis:\/\/h"$/))
    expect(resolveFleetOptions({ url: 'redis://h' })).toMatchObject({ prefix: 'spindle:', timeout: 100, maxEntryBytes: 4 * 1024 * 1024, compressAbove: 1024, failureThreshold: 5, openMs: 2000 })
  })
})
