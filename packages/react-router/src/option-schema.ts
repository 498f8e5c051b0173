// The JSON schema of reactRouterAdapter's options. Whether the build and folders exist, what
// excludes what in dev mode, and the defaults taken from the environment are checked and
// filled in code (options.ts).
import { poolOptionProperties } from '@spindle/runtime/pool'
import type { OptionSchema } from '@spindle/options'

export const reactRouterAdapterSchema: OptionSchema = {
  type: 'object',
  expected: 'an object with a `build`',
  additionalProperties: false,
  properties: {
    build: {
      anyOf: [{ type: 'string', minLength: 1 }, { type: 'object' }, { typeof: 'function' }],
      expected: 'the path of build/server/index.js, a ServerBuild or a function',
    },
    dev: { type: 'boolean', expected: 'a boolean' },
    root: { type: 'string', minLength: 1, expected: 'the path of the app folder' },
    getLoadContext: { typeof: 'function', expected: 'a function' },
    mode: { enum: ['production', 'development'], expected: "'production' or 'development'" },
    clientDir: { anyOf: [{ type: 'string', minLength: 1 }, { const: false }], expected: 'a folder path or false' },
    staticMaxAge: { type: 'integer', minimum: 0, expected: 'a whole number of seconds' },
    renderTurns: { type: 'boolean', expected: 'a boolean' },
    ...poolOptionProperties,
  },
}
