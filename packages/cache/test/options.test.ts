import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { createSharedStore, httpCache } from '@spindle/cache'
import { resolveHttpCacheOptions } from '../src/plugin-options.ts'
import { resolveStoreOptions } from '../src/store-options.ts'

const invalid = (message: RegExp) => expect.objectContaining({ code: 'SPINDLE_CACHE_INVALID_OPTION', message: expect.stringMatching(message) })

describe('store options', () => {
  it('fill documented defaults and come back frozen', () => {
    const o = resolveStoreOptions({})
    expect(o).toEqual({ maxBytes: 64 * 1024 * 1024, maxEntryBytes: 8 * 1024 * 1024, blockSize: 1024, maxTags: 16384, maxPending: 1024, lockTimeout: 5000 })
    expect(Object.isFrozen(o)).toBe(true)
    expect(resolveStoreOptions({ maxBytes: 1024 * 1024 }).maxEntryBytes).toBe(128 * 1024)
  })

  it('name the option that is wrong', () => {
    expect(() => createSharedStore({ maxBytes: -1 })).toThrow(invalid(/^maxBytes must be an integer/))
    expect(() => createSharedStore({ blockSize: 1000 })).toThrow(invalid(/^blockSize must be a power of two from 256 to 65536, got 1000$/))
    expect(() => createSharedStore({ blockSize: 128 })).toThrow(invalid(/^blockSize must be a power of two from 256 to 65536, got 128$/))
    expect(() => createSharedStore({ maxBytes: 1024 * 1024, maxEntryBytes: 1024 * 1024 })).toThrow(invalid(/^maxEntryBytes must be at most half/))
    expect(() => createSharedStore({ maxEntryBytes: 0 })).toThrow(invalid(/^maxEntryBytes must be a positive integer, got 0$/))
    expect(() => createSharedStore({ maxTags: 1.5 })).toThrow(invalid(/^maxTags must be an integer from 16 to 16777216, got 1.5$/))
    expect(() => createSharedStore({ lockTimeout: 0 })).toThrow(invalid(/^lockTimeout/))
    expect(() => createSharedStore({ maxbytes: 1 } as never)).toThrow(invalid(/^unknown option "maxbytes"$/))
    expect(() => createSharedStore('big' as never)).toThrow(invalid(/^options must be an object, got "big"$/))
  })

  it('fit the whole buffer, bookkeeping included, in maxBytes', () => {
    for (const maxBytes of [256 * 1024, 1024 * 1024, 10_000_000]) {
      const s = createSharedStore({ maxBytes, maxTags: 64 })
      expect(s.buffer.byteLength).toBeLessThanOrEqual(maxBytes)
      expect(s.stats().bytesCapacity).toBeGreaterThan(maxBytes * 0.5)
    }
  })
})

describe('httpCache options', () => {
  it('fill documented defaults and come back frozen', () => {
    const o = resolveHttpCacheOptions({})
    expect(o).toMatchObject({ sharedName: 'spindleCache', tagHeader: 'cache-tag', statusHeader: 'x-cache', coalesceTimeout: 10_000, staleOnError: 60, heuristicFraction: 0.1, heuristicMaxAge: 86_400, maxErrorTtl: 5, targetedCacheControl: 'cdn-cache-control', allowedHosts: undefined })
    expect(o.credentialHeaders).toEqual(['cookie', 'authorization'])
    expect(resolveHttpCacheOptions({ credentialHeaders: ['X-Api-Key'] }).credentialHeaders).toEqual(['cookie', 'authorization', 'x-api-key'])
    expect(Object.isFrozen(o)).toBe(true)
    expect(o.key({ url: '/a?b', headers: { host: 'Example.com', 'x-forwarded-host': 'x' }, encrypted: true })).toBe('https://example.com/a?b\nx-forwarded-host: x')
  })

  it('are checked when the plugin is registered, with the option named', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ store: {} }, /^store must be a SharedStore \(createSharedStore \/ openSharedStore\) or a FleetStore \(startFleet\)/],
      [{ sharedName: '' }, /^sharedName must be a non-empty string/],
      [{ storeOptions: { maxBytes: 1 } }, /^storeOptions\.maxBytes must be an integer from 262144 to 4398046511104, got 1$/],
      [{ storeOptions: { blockSize: 1000 } }, /^storeOptions\.blockSize must be a power of two from 256 to 65536, got 1000$/],
      [{ storeOptions: { maxBytes: 1024 * 1024, maxEntryBytes: 1024 * 1024 } }, /^storeOptions\.maxEntryBytes must be at most half of maxBytes \(524288\), got 1048576$/],
      [{ storeOptions: { maxbytes: 1 } }, /^unknown option "storeOptions\.maxbytes"$/],
      [{ storeOptions: 'big' }, /^storeOptions must be an object, got "big"$/],
      [{ key: 'url' }, /^key must be a function/],
      [{ keyHeaders: ['ok', 'not a header'] }, /^keyHeaders must be an array of header names/],
      [{ tagHeader: 'bad header' }, /^tagHeader must be a header name or false/],
      [{ statusHeader: 1 }, /^statusHeader must be a header name or false/],
      [{ coalesceTimeout: 0 }, /^coalesceTimeout must be a positive integer/],
      [{ coalesceTimeout: true }, /^coalesceTimeout must be a positive integer of ms or false, got true$/],
      [{ staleOnError: -1 }, /^staleOnError must be an integer/],
      [{ heuristicFraction: 2 }, /^heuristicFraction must be a number from 0 to 1/],
      [{ heuristicFraction: NaN }, /^heuristicFraction must be a number from 0 to 1, got NaN$/],
      [{ heuristicMaxAge: 1.5 }, /^heuristicMaxAge must be an integer/],
      [{ shouldCache: true }, /^shouldCache must be a function/],
      [{ allowedHosts: [] }, /^allowedHosts must be a non-empty array of host names/],
      [{ allowedHosts: ['app.com/x'] }, /^allowedHosts must be a non-empty array of host names/],
      [{ credentialHeaders: ['x api key'] }, /^credentialHeaders must be an array of header names/],
      [{ maxErrorTtl: -1 }, /^maxErrorTtl must be an integer/],
      [{ targetedCacheControl: 'bad header' }, /^targetedCacheControl must be a header name or false/],
      [{ ttl: 1 }, /^unknown option "ttl"/],
      ['big', /^options must be an object, got "big"$/],
    ]
    for (const [options, message] of cases) {
      const app = Fastify()
      await expect(app.register(httpCache, options as never).ready(), JSON.stringify(options)).rejects.toThrow(invalid(message))
      await app.close()
    }
  })

  it('lower-case header names and match allowed hosts in any case', () => {
    const o = resolveHttpCacheOptions({ tagHeader: 'Surrogate-Key', keyHeaders: ['X-Tenant', 'x-tenant'], allowedHosts: ['*.Example.COM', 'App.test', '[::1]'] })
    expect(o.tagHeader).toBe('surrogate-key')
    expect(o.key({ url: '/', headers: { host: 'h', 'x-tenant': 't' }, encrypted: false })).toBe('http://h/\nx-tenant: t')
    expect(['a.example.com', 'app.test:8080', '[::1]:3000', 'example.com', 'other.test'].map((h) => o.allowedHosts!(h))).toEqual([true, true, true, false, false])
  })

  it('accept false to turn headers and coalescing off', () => {
    const o = resolveHttpCacheOptions({ tagHeader: false, statusHeader: false, coalesceTimeout: false, keyHeaders: [] })
    expect([o.tagHeader, o.statusHeader, o.coalesceTimeout]).toEqual([false, false, false])
    expect(o.key({ url: '/', headers: { host: 'h', 'x-forwarded-host': 'x' }, encrypted: false })).toBe('http://h/')
  })
})
