// Options are checked against a JSON schema (compiled once by Ajv, as Fastify checks its own
// options), and the first problem becomes one sentence that names the option by its path.
// Every property schema carries an `expected` annotation that says, in words, what the
// option takes: the message is "<path> must be <expected>, got <value>". Relations between
// options (one at least another) are not shapes and stay in code beside the schema.
import { createRequire } from 'node:module'
import type { Ajv as AjvClass, ErrorObject, ValidateFunction } from 'ajv'
import type ajvKeywordsModule from 'ajv-keywords'

// Ajv is loaded on the first check, not with this module: a worker thread that imports an
// options module but never checks (its options were checked on the main thread) keeps some
// 2 MB of heap that Ajv and a compiled schema take.
const require = createRequire(import.meta.url)

/** A JSON schema node of an option, with the words for its error message. */
export interface OptionSchema {
  readonly expected?: string
  readonly [keyword: string]: unknown
}

/** Checks options; `prefix` ('cache.') is put before every option it names. */
export type OptionCheck = (input: unknown, prefix?: string) => void

/**
 * Returns a check that throws `fail(message)` for the first problem of an input against
 * `schema`: 'workers must be a positive integer, got 0', 'unknown option "shedding.foo"'.
 * `classes` names the constructors the schema's `instanceOf` keywords test against. The
 * schema is compiled on the first check (some 20-30 ms): a thread that loads the module but
 * never checks these options does not pay for it.
 */
export function optionChecker (schema: OptionSchema, fail: (message: string) => never, classes: Record<string, new (...args: never[]) => unknown> = {}): OptionCheck {
  let validate: ValidateFunction | undefined
  return (input, prefix = '') => {
    validate ??= compile(schema, classes)
    if (validate(input)) return
    fail(describe(pick(validate.errors ?? []), schema, input, prefix))
  }
}

function compile (schema: OptionSchema, classes: Record<string, new (...args: never[]) => unknown>): ValidateFunction {
  const { Ajv } = require('ajv') as { Ajv: typeof AjvClass }
  const ajvKeywords = require('ajv-keywords') as typeof ajvKeywordsModule
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true })
  // `typeof` (functions) comes from ajv-keywords. Its `instanceof` looks classes up in one
  // registry for the whole process; `instanceOf` takes them from this checker's `classes`.
  ajvKeywords.default(ajv, ['typeof'])
  ajv.addKeyword({
    keyword: 'instanceOf',
    schemaType: 'string',
    compile: (name: string) => {
      const C = classes[name]
      if (C === undefined) throw new Error(`instanceOf ${name}: no such class given to optionChecker`)
      return (data: unknown) => data instanceof C
    },
  })
  ajv.addKeyword({ keyword: 'expected', schemaType: 'string' })
  return ajv.compile(schema)
}

const ABOUT_KEYS = new Set(['additionalProperties', 'propertyNames'])

/** The error of the deepest option; at one depth an unknown or badly named key comes first. */
function pick (errors: readonly ErrorObject[]): ErrorObject {
  let best = errors[0]!
  for (const e of errors) {
    const depth = e.instancePath.split('/').length
    const bestDepth = best.instancePath.split('/').length
    if (depth > bestDepth || (depth === bestDepth && ABOUT_KEYS.has(e.keyword) && !ABOUT_KEYS.has(best.keyword))) best = e
  }
  return best
}

function describe (error: ErrorObject, schema: OptionSchema, input: unknown, prefix: string): string {
  const path = error.instancePath.split('/').slice(1).map(unescape)
  const name = (at: readonly string[]): string => at.length === 0 ? (prefix === '' ? 'options' : prefix.replace(/\.$/, '')) : prefix + at.join('.')
  if (error.keyword === 'additionalProperties') {
    return `unknown option ${JSON.stringify(name([...path, (error.params as { additionalProperty: string }).additionalProperty]))}`
  }
  if (error.keyword === 'propertyNames') {
    const keys = nodeAt(schema, path)?.propertyNames as OptionSchema | undefined
    return `${name(path)} keys must be ${keys?.expected ?? 'valid names'}, got ${JSON.stringify((error.params as { propertyName: string }).propertyName)}`
  }
  if (error.keyword === 'required') path.push((error.params as { missingProperty: string }).missingProperty)
  // The message speaks of the deepest option that says what it expects: an array, not its item.
  for (let depth = path.length; depth >= 0; depth--) {
    const at = path.slice(0, depth)
    const expected = nodeAt(schema, at)?.expected
    if (expected !== undefined) return `${name(at)} must be ${expected}, got ${show(valueAt(input, at))}`
  }
  return `${name(path)} ${error.message ?? 'is not valid'}`
}

/** The schema of the option at `path`, following properties, additionalProperties and items. */
function nodeAt (schema: OptionSchema, path: readonly string[]): OptionSchema | undefined {
  let node: OptionSchema | undefined = schema
  for (const key of path) {
    if (node === undefined) return undefined
    const props = node.properties as Record<string, OptionSchema> | undefined
    if (props?.[key] !== undefined) node = props[key]
    else if (typeof node.additionalProperties === 'object') node = node.additionalProperties as OptionSchema
    else if (typeof node.items === 'object') node = node.items as OptionSchema
    else if (Array.isArray(node.anyOf)) node = (node.anyOf as OptionSchema[]).map((branch) => nodeAt(branch, [key])).find((n) => n !== undefined)
    else return undefined
  }
  return node
}

function valueAt (input: unknown, path: readonly string[]): unknown {
  let value = input
  for (const key of path) value = value === null || typeof value !== 'object' ? undefined : (value as Record<string, unknown>)[key]
  return value
}

/** JSON pointer segments escape '~' and '/'. */
function unescape (segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~')
}

/** A value as it should appear in an option error: strings quoted, objects by type. */
export function show (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value)
  return typeof value
}
