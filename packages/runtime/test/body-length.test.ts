import { describe, expect, it } from 'vitest'
import { BodyLength, declaredLength } from '../src/body-length.ts'

describe('declaredLength', () => {
  it('reads the length a body after the head must have', () => {
    expect(declaredLength('GET', 200, '12')).toBe(12)
    expect(declaredLength('POST', 201, 0)).toBe(0)
    expect(declaredLength('GET', 404, ' 7 ')).toBe(7)
  })

  it('binds nothing where Node writes no body, or the value is no length', () => {
    expect(declaredLength('HEAD', 200, '12')).toBeUndefined()
    for (const status of [100, 103, 204, 304]) expect(declaredLength('GET', status, '12')).toBeUndefined()
    for (const value of [undefined, ['1', '2'], '-1', '1.5', 'x', '9007199254740993']) expect(declaredLength('GET', 200, value)).toBeUndefined()
  })
})

describe('BodyLength', () => {
  it('passes a body of exactly the declared length, in any chunks', () => {
    const length = new BodyLength(10)
    length.add(3)
    length.add(0)
    length.add(7)
    expect(() => length.end()).not.toThrow()
  })

  it('fails at the first chunk past the length, naming by how much', () => {
    const length = new BodyLength(4)
    length.add(3)
    expect(() => length.add(3)).toThrow(expect.objectContaining({ code: 'SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH', statusCode: 502, message: "The app's body is longer than its own Content-Length, by 2 bytes" }))
  })

  it('fails at an end short of the length', () => {
    const length = new BodyLength(5)
    length.add(2)
    expect(() => length.end()).toThrow(expect.objectContaining({ code: 'SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH', message: "The app's body is shorter than its own Content-Length, by 3 bytes" }))
  })

  it('counts nothing without a declared length', () => {
    const length = new BodyLength(undefined)
    length.add(1e9)
    expect(() => length.end()).not.toThrow()
  })
})
