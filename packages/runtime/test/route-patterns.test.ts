import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { RoutePatterns } from '../src/metrics/route-patterns.ts'

describe('RoutePatterns', () => {
  it('names the pattern of the route a raw request would take, or none', () => {
    const patterns = new RoutePatterns(Fastify())
    patterns.add('GET', '/')
    patterns.add(['GET', 'HEAD'], '/items/:id')
    patterns.add('post', '/items')
    patterns.add('GET', '/files/*')
    expect(patterns.find('GET', '/')).toBe('/')
    expect(patterns.find('GET', '/items/42?x=1')).toBe('/items/:id')
    expect(patterns.find('HEAD', '/items/42')).toBe('/items/:id')
    expect(patterns.find('POST', '/items')).toBe('/items')
    expect(patterns.find('GET', '/files/a/b.css')).toBe('/files/*')
    expect(patterns.find('DELETE', '/items/42')).toBeUndefined()
    expect(patterns.find('GET', '/no/such/page')).toBeUndefined()
    expect(patterns.find(undefined, '/')).toBeUndefined()
    // Case and trailing slash as Fastify's defaults have them.
    expect(patterns.find('GET', '/Items/42')).toBeUndefined()
    expect(patterns.find('GET', '/items/42/')).toBeUndefined()
  })

  it('matches as the instance\'s router options say, in either place Fastify takes them', () => {
    const top = new RoutePatterns(Fastify({ ignoreTrailingSlash: true, caseSensitive: false }))
    const nested = new RoutePatterns(Fastify({ routerOptions: { ignoreTrailingSlash: true, caseSensitive: false } }))
    for (const patterns of [top, nested]) {
      patterns.add('GET', '/items/:id')
      expect(patterns.find('GET', '/ITEMS/42/')).toBe('/items/:id')
    }
  })

  it('takes the same method and pattern twice (routes apart only by a constraint) and unknown methods without throwing', () => {
    const patterns = new RoutePatterns(Fastify())
    patterns.add('GET', '/v')
    expect(() => { patterns.add('GET', '/v') }).not.toThrow()
    expect(() => { patterns.add('NOT-A-METHOD', '/v') }).not.toThrow()
    expect(patterns.find('GET', '/v')).toBe('/v')
    expect(patterns.find('NOT-A-METHOD', '/v')).toBeUndefined()
  })
})
