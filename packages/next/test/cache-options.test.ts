import { describe, expect, it } from 'vitest'
import { SPINDLE_NEXT_CACHE_CONFLICT, withSpindle } from '@spindle/next'

describe('withSpindle', () => {
  it('wires both handler kinds to the shared store and turns the per-thread copy off', () => {
    const config = withSpindle({ reactStrictMode: true, cacheComponents: true, cacheHandlers: { custom: '/x.js' } })
    expect(config.reactStrictMode).toBe(true)
    expect(config.cacheMaxMemorySize).toBe(0)
    expect(config.cacheHandler).toMatch(/cache[/\\]cache-handler\.js$/)
    expect(config.cacheHandlers?.default).toMatch(/cache[/\\]use-cache-handler\.js$/)
    expect(config.cacheHandlers?.remote).toBe(config.cacheHandlers?.default)
    expect(config.cacheHandlers?.custom).toBe('/x.js')
    expect(Object.isFrozen(config)).toBe(true)
    // Applying it twice is harmless.
    expect(withSpindle({ ...config })).toEqual(config)
  })

  it('wraps a config function', async () => {
    const fn = withSpindle(async (phase: string) => ({ env: { phase } }))
    const config = await fn('phase-production-build')
    expect(config.env).toEqual({ phase: 'phase-production-build' })
    expect(config.cacheMaxMemorySize).toBe(0)
  })

  it('names the setting it refuses', () => {
    expect(() => withSpindle(null as never)).toThrow(/must be an object or a function returning one, got null/)
    expect(() => withSpindle({ cacheHandler: '/mine.js' })).toThrow(/cacheHandler is already set to "\/mine.js"/)
    expect(() => withSpindle({ cacheHandlers: { remote: '/r.js' } })).toThrow(/cacheHandlers.remote is already set/)
    expect(() => withSpindle({ cacheHandlers: 'x' as never })).toThrow(/cacheHandlers must be an object, got string/)
    let error: unknown
    try { withSpindle({ cacheMaxMemorySize: 50e6 }) } catch (err) { error = err }
    expect(error).toBeInstanceOf(SPINDLE_NEXT_CACHE_CONFLICT)
    expect((error as { code: string }).code).toBe('SPINDLE_NEXT_CACHE_CONFLICT')
    expect(String((error as Error).message)).toMatch(/cacheMaxMemorySize must be 0 or unset/)
  })
})
