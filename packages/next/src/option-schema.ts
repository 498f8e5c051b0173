// The JSON schema of nextAdapter's options. Whether `dir` holds a built app, and the defaults
// taken from the runtime and the environment, are checked and filled in code (options.ts).
import { poolOptionProperties } from '@spindle/runtime/pool'
import type { OptionSchema } from '@spindle/options'

export const nextAdapterSchema: OptionSchema = {
  type: 'object',
  expected: 'an object with a `dir`',
  additionalProperties: false,
  required: ['dir'],
  properties: {
    dir: { type: 'string', minLength: 1, expected: 'the path of a Next.js app folder' },
    dev: { type: 'boolean', expected: 'a boolean' },
    quiet: { type: 'boolean', expected: 'a boolean' },
    renderTurns: { type: 'boolean', expected: 'a boolean' },
    ...poolOptionProperties,
    hostname: { type: 'string', minLength: 1, expected: 'a non-empty string' },
    port: { type: 'integer', minimum: 1, maximum: 65535, expected: 'an integer from 1 to 65535' },
  },
}
