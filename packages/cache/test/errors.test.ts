import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import * as cache from '@spindle/cache'
import { errorCodes } from '@spindle/cache'

const docs = readFileSync(new URL('../../../docs/cache.md', import.meta.url), 'utf8')

describe('error codes', () => {
  it('are unique, exported, prefixed and documented', () => {
    const codes = Object.keys(errorCodes)
    expect(codes.length).toBeGreaterThan(0)
    for (const code of codes) {
      expect(code).toMatch(/^SPINDLE_CACHE_[A-Z_]+$/)
      expect((cache as Record<string, unknown>)[code]).toBe(errorCodes[code as keyof typeof errorCodes])
      expect(new errorCodes[code as keyof typeof errorCodes]('x').code).toBe(code)
      expect(docs).toContain(`\`${code}\``)
    }
  })
})
