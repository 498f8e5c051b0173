import { SPINDLE_RUNTIME_INVALID_OPTION } from './errors.ts'

/** Throws the coded error for a bad option; the message names the option. */
export function fail (message: string): never {
  throw new SPINDLE_RUNTIME_INVALID_OPTION(message)
}

/** A value as it should appear in an option error: strings quoted, objects by type. */
export function show (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value)
  return typeof value
}
