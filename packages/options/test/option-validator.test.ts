import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { optionChecker, type OptionSchema } from '../src/index.ts'

class Store {}

const schema: OptionSchema = {
  type: 'object',
  expected: 'an object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, expected: 'a non-empty string' },
    count: { type: 'integer', minimum: 1, expected: 'a positive integer' },
    store: { instanceOf: 'Store', expected: 'a Store' },
    onEvent: { typeof: 'function', expected: 'a function' },
    paths: { type: 'array', items: { type: 'string', pattern: '^/' }, expected: "an array of paths starting with '/'" },
    routes: {
      type: 'object',
      expected: 'an object',
      propertyNames: { pattern: '^[A-Z]+ /', expected: "'METHOD /path'" },
      additionalProperties: { typeof: 'function', expected: 'a function' },
    },
    nested: {
      anyOf: [{ const: false }, {
        type: 'object',
        additionalProperties: false,
        properties: { limit: { type: 'number', minimum: 0, expected: 'a number from 0' } },
      }],
      expected: 'an object or false',
    },
  },
}

class CodedError extends Error {}
const check = optionChecker(schema, (message) => { throw new CodedError(message) }, { Store })
const problem = (input: unknown, prefix?: string): string => {
  try {
    check(input, prefix)
  } catch (err) {
    expect(err).toBeInstanceOf(CodedError)
    return (err as Error).message
  }
  return 'accepted'
}

describe('optionChecker', () => {
  it('accepts what the schema allows', () => {
    expect(problem({ name: 'a' })).toBe('accepted')
    expect(problem({ name: 'a', count: 2, store: new Store(), onEvent () {}, paths: ['/x'], routes: { 'GET /v': () => {} }, nested: false })).toBe('accepted')
    expect(problem({ name: 'a', nested: { limit: 0 } })).toBe('accepted')
  })

  it('names the option by its path, says what it takes and shows the value', () => {
    expect(problem(null)).toBe('options must be an object, got null')
    expect(problem({})).toBe('name must be a non-empty string, got undefined')
    expect(problem({ name: 'a', count: 1.5 })).toBe('count must be a positive integer, got 1.5')
    expect(problem({ name: 'a', count: '2' })).toBe('count must be a positive integer, got "2"')
    expect(problem({ name: 'a', store: {} })).toBe('store must be a Store, got object')
    expect(problem({ name: 'a', onEvent: 'x' })).toBe('onEvent must be a function, got "x"')
    expect(problem({ name: 'a', nested: true })).toBe('nested must be an object or false, got true')
    expect(problem({ name: 'a', nested: { limit: -1 } })).toBe('nested.limit must be a number from 0, got -1')
  })

  it('speaks of the array, not its item, and of a key name that does not fit', () => {
    expect(problem({ name: 'a', paths: ['/x', 'y'] })).toBe("paths must be an array of paths starting with '/', got object")
    expect(problem({ name: 'a', routes: { '/v': () => {} } })).toBe("routes keys must be 'METHOD /path', got \"/v\"")
    expect(problem({ name: 'a', routes: { 'GET /v': 1 } })).toBe('routes.GET /v must be a function, got 1')
  })

  it('reports unknown options with their path, and puts the prefix before every name', () => {
    expect(problem({ name: 'a', nested: { limt: 1 } })).toBe('unknown option "nested.limt"')
    expect(problem({ name: 'a', count: 0 }, 'cache.')).toBe('cache.count must be a positive integer, got 0')
    expect(problem(3, 'cache.')).toBe('cache must be an object, got 3')
    expect(problem({ name: 'a', nested: { limt: 1 } }, 'cache.')).toBe('unknown option "cache.nested.limt"')
  })

  it('names any unknown key it is given', () => {
    const known = new Set(Object.keys(schema.properties as object))
    fc.assert(fc.property(fc.string({ minLength: 1 }).filter((k) => !known.has(k) && k !== '__proto__'), fc.integer(), (key, value) => {
      expect(problem({ name: 'a', [key]: value })).toBe(`unknown option ${JSON.stringify(key)}`)
    }))
  })

  it('refuses a schema that names a class it was not given, when it is first used', () => {
    const unknownClass = optionChecker({ type: 'object', properties: { s: { instanceOf: 'Nope' } } }, (message) => { throw new Error(message) })
    expect(() => unknownClass({})).toThrow(/instanceOf Nope/)
  })
})
