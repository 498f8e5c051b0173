import createError from '@fastify/error'

// Every error the cache throws. Codes are stable and never reused; errors that cross a
// thread boundary are matched by `code`, not by class.

export const SPINDLE_CACHE_INVALID_OPTION = createError(
  'SPINDLE_CACHE_INVALID_OPTION',
  '%s',
  500,
  TypeError,
)

export const SPINDLE_CACHE_INVALID_BUFFER = createError(
  'SPINDLE_CACHE_INVALID_BUFFER',
  'Cannot open a shared store: %s',
  500,
  TypeError,
)

export const SPINDLE_CACHE_INVALID_ARGUMENT = createError(
  'SPINDLE_CACHE_INVALID_ARGUMENT',
  '%s',
  500,
  TypeError,
)

export const SPINDLE_CACHE_INVALID_PURGE = createError(
  'SPINDLE_CACHE_INVALID_PURGE',
  'Invalid purge request: %s',
  400,
)

export const SPINDLE_CACHE_INVALID_HOST = createError(
  'SPINDLE_CACHE_INVALID_HOST',
  'Invalid Host header: %s',
  400,
)

export const SPINDLE_CACHE_HOST_NOT_ALLOWED = createError(
  'SPINDLE_CACHE_HOST_NOT_ALLOWED',
  'Host %s is not one of allowedHosts',
  400,
)

export const errorCodes = Object.freeze({
  SPINDLE_CACHE_INVALID_OPTION,
  SPINDLE_CACHE_INVALID_BUFFER,
  SPINDLE_CACHE_INVALID_ARGUMENT,
  SPINDLE_CACHE_INVALID_PURGE,
  SPINDLE_CACHE_INVALID_HOST,
  SPINDLE_CACHE_HOST_NOT_ALLOWED,
})

/** Throws SPINDLE_CACHE_INVALID_OPTION: the failure every option checker of this package reports through. */
export function invalidOption (message: string): never {
  throw new SPINDLE_CACHE_INVALID_OPTION(message)
}
