import { SPINDLE_RUNTIME_INVALID_OPTION } from './errors.ts'

/** Throws the coded error for a bad option; the message names the option. */
export function fail (message: string): never {
  throw new SPINDLE_RUNTIME_INVALID_OPTION(message)
}
