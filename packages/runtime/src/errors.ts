import createError from '@fastify/error'

// Every error the runtime throws or reports. Codes are stable and never reused;
// errors that cross a thread boundary are matched by `code`, not by class.

export const SPINDLE_RUNTIME_INVALID_OPTION = createError(
  'SPINDLE_RUNTIME_INVALID_OPTION',
  '%s',
  500,
  TypeError,
)

export const SPINDLE_RUNTIME_APP_NOT_FOUND = createError(
  'SPINDLE_RUNTIME_APP_NOT_FOUND',
  'Cannot find the app module %s',
)

export const SPINDLE_RUNTIME_APP_INVALID = createError(
  'SPINDLE_RUNTIME_APP_INVALID',
  'The app module %s %s',
  500,
  TypeError,
)

export const SPINDLE_RUNTIME_WORKER_START_FAILED = createError(
  'SPINDLE_RUNTIME_WORKER_START_FAILED',
  'Worker %d failed to start: %s',
)

export const SPINDLE_RUNTIME_START_TIMEOUT = createError(
  'SPINDLE_RUNTIME_START_TIMEOUT',
  'Worker %d did not start listening within startTimeout (%d ms)',
)

export const SPINDLE_RUNTIME_REUSEPORT_UNSUPPORTED = createError(
  'SPINDLE_RUNTIME_REUSEPORT_UNSUPPORTED',
  "mode 'reusePort' needs SO_REUSEPORT port sharing, which Spindle uses on Linux (this is %s, Node.js %s): use mode 'pool' or 'auto'",
)

export const SPINDLE_RUNTIME_NODE_TOO_OLD = createError(
  'SPINDLE_RUNTIME_NODE_TOO_OLD',
  'Spindle needs Node.js >= 22.22.0 (this is %s)',
)

export const SPINDLE_RUNTIME_CONFIG_LOAD_FAILED = createError(
  'SPINDLE_RUNTIME_CONFIG_LOAD_FAILED',
  'Cannot load the config file %s: %s',
)

export const SPINDLE_RUNTIME_PORT_IN_USE = createError(
  'SPINDLE_RUNTIME_PORT_IN_USE',
  'Cannot listen on %s:%d: the address is in use by a socket without SO_REUSEPORT (another server?)',
)

export const SPINDLE_RUNTIME_CONTROL_PORT_IN_USE = createError(
  'SPINDLE_RUNTIME_CONTROL_PORT_IN_USE',
  'Cannot listen on %s:%d for the control port (health probes, /status, /metrics): the address is in use',
)

export const SPINDLE_RUNTIME_CLI_USAGE = createError(
  'SPINDLE_RUNTIME_CLI_USAGE',
  '%s',
  500,
  TypeError,
)

export const SPINDLE_RUNTIME_CACHE_UNAVAILABLE = createError(
  'SPINDLE_RUNTIME_CACHE_UNAVAILABLE',
  'A cache URL is set (%s) but @spindle/cache cannot be loaded: %s',
)
export const SPINDLE_RUNTIME_STOPPED_DURING_START = createError(
  'SPINDLE_RUNTIME_STOPPED_DURING_START',
  'Stopped by %s while the workers were starting',
)

export const SPINDLE_RUNTIME_POOL_START_FAILED = createError(
  'SPINDLE_RUNTIME_POOL_START_FAILED',
  'The render pool did not start: %s',
)

export const SPINDLE_RUNTIME_POOL_THREAD_FAILED = createError(
  'SPINDLE_RUNTIME_POOL_THREAD_FAILED',
  'The render pool thread serving this request failed',
  502,
)

export const SPINDLE_RUNTIME_POOL_UNAVAILABLE = createError(
  'SPINDLE_RUNTIME_POOL_UNAVAILABLE',
  'The render pool has no thread running: its threads failed to load and are being restarted',
  503,
)

export const SPINDLE_RUNTIME_POOL_BAD_RESPONSE = createError(
  'SPINDLE_RUNTIME_POOL_BAD_RESPONSE',
  'The app answered with a response head that cannot be sent',
  502,
)

export const SPINDLE_RUNTIME_POOL_OVERLOADED = createError(
  'SPINDLE_RUNTIME_POOL_OVERLOADED',
  'The render pool cannot start this request in time (%s)',
  503,
)

/** Every runtime error constructor, keyed by code (used by the docs test). */
export const SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH = createError(
  'SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH',
  "The app's body is %s than its own Content-Length, by %d bytes",
  502,
)

export const errorCodes = {
  SPINDLE_RUNTIME_INVALID_OPTION,
  SPINDLE_RUNTIME_APP_NOT_FOUND,
  SPINDLE_RUNTIME_APP_INVALID,
  SPINDLE_RUNTIME_WORKER_START_FAILED,
  SPINDLE_RUNTIME_START_TIMEOUT,
  SPINDLE_RUNTIME_REUSEPORT_UNSUPPORTED,
  SPINDLE_RUNTIME_NODE_TOO_OLD,
  SPINDLE_RUNTIME_CONFIG_LOAD_FAILED,
  SPINDLE_RUNTIME_PORT_IN_USE,
  SPINDLE_RUNTIME_CONTROL_PORT_IN_USE,
  SPINDLE_RUNTIME_CLI_USAGE,
  SPINDLE_RUNTIME_CACHE_UNAVAILABLE,
  SPINDLE_RUNTIME_STOPPED_DURING_START,
  SPINDLE_RUNTIME_POOL_START_FAILED,
  SPINDLE_RUNTIME_POOL_THREAD_FAILED,
  SPINDLE_RUNTIME_POOL_OVERLOADED,
  SPINDLE_RUNTIME_POOL_UNAVAILABLE,
  SPINDLE_RUNTIME_POOL_BAD_RESPONSE,
  SPINDLE_RUNTIME_BODY_LENGTH_MISMATCH,
} as const
