import createError from '@fastify/error'

export const SPINDLE_NEXT_INVALID_OPTION = createError('SPINDLE_NEXT_INVALID_OPTION', '%s', 500, TypeError)

export const SPINDLE_NEXT_NO_BUILD = createError(
  'SPINDLE_NEXT_NO_BUILD',
  'No production build in %s (.next/BUILD_ID is missing): run "next build" there first, or pass dev: true',
)

export const SPINDLE_NEXT_PREPARE_FAILED = createError('SPINDLE_NEXT_PREPARE_FAILED', 'Next.js failed to start for %s: %s')

export const SPINDLE_NEXT_STANDALONE_NO_STATIC = createError(
  'SPINDLE_NEXT_STANDALONE_NO_STATIC',
  'The standalone build in %s has no .next/static: "next build" does not copy it there. Copy the app\'s .next/static into it (and public/ next to .next), as for Next\'s own server.js',
)

export const SPINDLE_NEXT_BAD_REQUEST = createError('SPINDLE_NEXT_BAD_REQUEST', 'Bad request: %s', 400)
