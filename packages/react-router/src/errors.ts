import createError from '@fastify/error'

export const SPINDLE_REACT_ROUTER_INVALID_OPTION = createError('SPINDLE_REACT_ROUTER_INVALID_OPTION', '%s', 500, TypeError)

export const SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND = createError(
  'SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND',
  'No React Router server build at %s: run "react-router build" first',
)

export const SPINDLE_REACT_ROUTER_BUILD_INVALID = createError(
  'SPINDLE_REACT_ROUTER_BUILD_INVALID',
  'The React Router build %s is not a server build (no routes or entry): %s',
)

export const SPINDLE_REACT_ROUTER_BAD_REQUEST = createError(
  'SPINDLE_REACT_ROUTER_BAD_REQUEST',
  'Bad request: %s',
  400,
)

export const SPINDLE_REACT_ROUTER_URI_TOO_LONG = createError(
  'SPINDLE_REACT_ROUTER_URI_TOO_LONG',
  'The path has more than %d segments',
  414,
)

export const SPINDLE_REACT_ROUTER_VITE_FAILED = createError(
  'SPINDLE_REACT_ROUTER_VITE_FAILED',
  'dev: true could not start Vite for the app in %s: %s',
)
