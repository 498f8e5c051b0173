import { SPINDLE_RUNTIME_INVALID_OPTION } from './errors.ts'

/** Throws the coded error for a bad option; the message names the option. */
export function fail (message: string): never {
  throw new SPINDLE_RUNTIME_INVALID_OPTION(message)
}

/**
 * Fails for an entry of `options` (appOptions, shared) that a structured clone cannot copy: each
 * worker gets its copy in workerData, and the first worker's start would otherwise fail
 * with V8's words and no option named. Names the deepest property that cannot be copied.
 */
export function checkCloneable (options: Record<string, unknown> | undefined, name: string): void {
  if (options === undefined) return
  for (const [key, value] of Object.entries(options)) {
    const found = uncloneable(value, `${name}.${key}`)
    if (found) fail(`${found.path} must be structured-cloneable (each worker gets a copy), got ${found.what}`)
  }
}

function uncloneable (value: unknown, path: string): { path: string, what: string } | undefined {
  try {
    structuredClone(value)
    return undefined
  } catch (err) {
    if (typeof value === 'function') return { path, what: 'a function' }
    if (typeof value === 'symbol') return { path, what: 'a symbol' }
    if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const found = uncloneable(item, `${path}.${key}`)
        if (found) return found
      }
      return { path, what: `${value.constructor?.name ?? 'an object'} (${(err as Error).message})` }
    }
    return { path, what: (err as Error).message }
  }
}
