import createError from '@fastify/error'

// Every error create-spindle reports. Codes are stable and never reused; the CLI prints
// `code: message` and exits 1 (2 for usage errors, 128 + the signal's number when a
// signal stopped the run).

export const SPINDLE_CREATE_USAGE = createError(
  'SPINDLE_CREATE_USAGE',
  '%s. See create-spindle --help',
  500,
  TypeError,
)

export const SPINDLE_CREATE_INVALID_NAME = createError(
  'SPINDLE_CREATE_INVALID_NAME',
  'The project name %s is not a valid npm package name: %s',
  500,
  TypeError,
)

export const SPINDLE_CREATE_UNKNOWN_TEMPLATE = createError(
  'SPINDLE_CREATE_UNKNOWN_TEMPLATE',
  'Unknown template %s: choose one of %s',
  500,
  TypeError,
)

export const SPINDLE_CREATE_DIR_NOT_EMPTY = createError(
  'SPINDLE_CREATE_DIR_NOT_EMPTY',
  'The folder %s is not empty: pick a new folder name or empty it first',
)

export const SPINDLE_CREATE_PACKAGES_NOT_FOUND = createError(
  'SPINDLE_CREATE_PACKAGES_NOT_FOUND',
  'No tarball for %s in %s (set by --packages-from or SPINDLE_CREATE_PACKAGES): run `pnpm pack` in that package and put the .tgz there',
)

export const SPINDLE_CREATE_INSTALL_FAILED = createError(
  'SPINDLE_CREATE_INSTALL_FAILED',
  '`%s` failed in %s (%s): the project is written; fix the cause and run it again in that folder',
)

export const SPINDLE_CREATE_CANCELLED = createError(
  'SPINDLE_CREATE_CANCELLED',
  'Cancelled: nothing was written',
)

export const SPINDLE_CREATE_WRITE_FAILED = createError(
  'SPINDLE_CREATE_WRITE_FAILED',
  'Cannot write the project to %s (%s): %s',
)

export const SPINDLE_CREATE_INTERRUPTED = createError(
  'SPINDLE_CREATE_INTERRUPTED',
  'Interrupted: %s',
)

export const errorCodes = {
  SPINDLE_CREATE_USAGE,
  SPINDLE_CREATE_INVALID_NAME,
  SPINDLE_CREATE_UNKNOWN_TEMPLATE,
  SPINDLE_CREATE_DIR_NOT_EMPTY,
  SPINDLE_CREATE_PACKAGES_NOT_FOUND,
  SPINDLE_CREATE_INSTALL_FAILED,
  SPINDLE_CREATE_CANCELLED,
  SPINDLE_CREATE_WRITE_FAILED,
  SPINDLE_CREATE_INTERRUPTED,
} as const
