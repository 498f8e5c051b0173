import createError from '@fastify/error'

// Errors of withSpindle(). Codes are stable and never reused.

export const SPINDLE_NEXT_CACHE_INVALID_CONFIG = createError(
  'SPINDLE_NEXT_CACHE_INVALID_CONFIG',
  'withSpindle: %s',
  500,
  TypeError,
)

export const SPINDLE_NEXT_CACHE_CONFLICT = createError(
  'SPINDLE_NEXT_CACHE_CONFLICT',
  'withSpindle: %s',
  500,
)
