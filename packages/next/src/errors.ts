import createError from '@fastify/error'

export const SPINDLE_NEXT_INVALID_OPTION = createError('SPINDLE_NEXT_INVALID_OPTION', '%s', 500, TypeError)

export const SPINDLE_NEXT_NO_BUILD = createError(
  'SPINDLE_NEXT_NO_BUILD',
  'No production build in %s (.next/BUILD_ID is missing): run "next build" there first, or pass dev: true',
)

export const SPINDLE_NEXT_PREPARE_FAILED = createError('SPINDLE_NEXT_PREPARE_FAILED', 'Next.js failed to start for %s: %s')
