import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import * as create from '../src/index.ts'
import { errorCodes } from '../src/index.ts'

const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8')

describe('error codes', () => {
  it('are unique, exported, prefixed and documented', () => {
    const codes = Object.keys(errorCodes)
    expect(new Set(codes).size).toBe(codes.length)
    for (const code of codes) {
      expect(code).toMatch(/^SPINDLE_CREATE_[A-Z_]+$/)
      expect((create as Record<string, unknown>)[code]).toBe(errorCodes[code as keyof typeof errorCodes])
      expect(new errorCodes[code as keyof typeof errorCodes]('x', 'y', 'z').code).toBe(code)
      expect(docs).toContain(`\`${code}\``)
    }
  })
})
