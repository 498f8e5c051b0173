// The JSON schema of every option of @spindle/runtime: serve() and `spindle start` (through
// the config file and the flags), and the loadShedding plugin. The TypeScript types beside
// them (options.ts, shed-options.ts) say the same in types; defaults that depend on the
// machine and relations between options are filled and checked in code.
import type { OptionSchema } from '@spindle/options'
import { HEARTBEAT_INTERVAL } from './protocol.ts'

/**
 * The longest delay Node's timers take: a longer one runs after 1 ms, so a timeout of a month
 * would fire at once. Every option in milliseconds stops here.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1
/**
 * A worker's heartbeat ticks every HEARTBEAT_INTERVAL ms and the supervisor reads it up to a
 * quarter of heartbeatTimeout later, so a loop that turns freely can look silent for about
 * 75 ms at a 100 ms heartbeatTimeout; on a loaded 2-core machine a worker serving light
 * traffic was then reported unresponsive within seconds. Four intervals leave a margin.
 */
const MIN_HEARTBEAT_TIMEOUT = 4 * HEARTBEAT_INTERVAL
/**
 * A worker with the runtime's own plugins (load shedding, metrics) and a small app holds some
 * 12 MB of heap once it serves: below 14 MB it ran out of memory while it started (below 3 MB
 * V8 ended the whole process), at 14-16 MB it served next to the 0.8 and 0.9 heap ratios that
 * make it shed and be replaced. Twice what it needs to start.
 */
const MIN_HEAP_MB = 32

const positiveInt = { type: 'integer', minimum: 1, expected: 'a positive integer' } as const
const milliseconds = {
  type: 'number', exclusiveMinimum: 0, maximum: MAX_TIMER_MS, expected: `a positive number of milliseconds, at most ${MAX_TIMER_MS}`,
} as const
const msFromZero = { type: 'number', minimum: 0, maximum: MAX_TIMER_MS, expected: `a number of milliseconds from 0 to ${MAX_TIMER_MS}` } as const
const fromZero = { type: 'number', minimum: 0, expected: 'a number from 0' } as const
const fraction = { type: 'number', minimum: 0, maximum: 1, expected: 'a number from 0 to 1' } as const
const port = { type: 'integer', minimum: 0, maximum: 65535, expected: 'an integer from 0 to 65535' } as const
const nonEmpty = { type: 'string', minLength: 1, expected: 'a non-empty string' } as const
const boolean = { type: 'boolean', expected: 'a boolean' } as const
const object = { type: 'object', expected: 'an object' } as const
const paths = {
  type: 'array',
  items: { type: 'string', pattern: '^/', expected: "a path starting with '/'" },
  expected: "an array of paths starting with '/'",
} as const

/** The loadShedding plugin's options; `shedding` under serve(). */
export const sheddingSchema: OptionSchema = {
  type: 'object',
  expected: 'an object',
  additionalProperties: false,
  properties: {
    maxBacklog: msFromZero,
    overloadBacklog: msFromZero,
    maxEventLoopDelay: msFromZero,
    maxEventLoopUtilization: fraction,
    maxHeapUsedBytes: fromZero,
    sampleInterval: { type: 'number', minimum: 10, maximum: MAX_TIMER_MS, expected: `a number of milliseconds from 10 to ${MAX_TIMER_MS}` },
    maxQueueTime: msFromZero,
    maxHeapRatio: fraction,
    unreadyAfter: msFromZero,
    retryAfter: { type: 'integer', minimum: 0, expected: 'a whole number of seconds' },
    retryHold: msFromZero,
    staticPrefixes: paths,
  },
}

/** serve()'s options, which are also the keys of a `spindle start` config file. */
export const serveSchema: OptionSchema = {
  type: 'object',
  expected: 'an object',
  additionalProperties: false,
  required: ['app'],
  properties: {
    app: {
      anyOf: [{ type: 'string', minLength: 1 }, { instanceOf: 'URL' }],
      expected: 'the path of a module whose default export is a Fastify plugin',
    },
    appOptions: object,
    workers: { type: 'integer', minimum: 1, maximum: 1024, expected: 'a whole number from 1 to 1024' },
    port,
    host: nonEmpty,
    controlPort: { anyOf: [port, { const: false }], expected: 'an integer from 0 to 65535, or false' },
    controlHost: nonEmpty,
    shutdownTimeout: milliseconds,
    startTimeout: milliseconds,
    heartbeatTimeout: {
      type: 'number',
      minimum: MIN_HEARTBEAT_TIMEOUT,
      maximum: MAX_TIMER_MS,
      expected: `a number of milliseconds from ${MIN_HEARTBEAT_TIMEOUT} (four ${HEARTBEAT_INTERVAL} ms heartbeats) to ${MAX_TIMER_MS}`,
    },
    stallTimeout: milliseconds,
    heapLimitRatio: { type: 'number', exclusiveMinimum: 0, maximum: 1, expected: 'a number above 0 and at most 1' },
    maxHeapMb: { type: 'integer', minimum: MIN_HEAP_MB, expected: `a whole number of MB from ${MIN_HEAP_MB}` },
    youngGenerationMb: {
      anyOf: [{ const: 0 }, { type: 'integer', minimum: 3 }],
      expected: "0 (V8's default) or a whole number of at least 3",
    },
    memoryReducer: boolean,
    parallelScavenge: boolean,
    balanceConnections: boolean,
    minReadyWorkers: positiveInt,
    restartDelay: milliseconds,
    maxRestartDelay: milliseconds,
    handleSignals: boolean,
    exitOnShutdown: boolean,
    cwd: nonEmpty,
    env: { type: 'object', expected: 'an object', additionalProperties: { type: 'string', expected: 'a string' } },
    shared: object,
    controlRoutes: {
      type: 'object',
      expected: 'an object',
      propertyNames: { pattern: '^[A-Z]+ /\\S*$', expected: "'METHOD /path', e.g. 'GET /version'" },
      additionalProperties: { typeof: 'function', expected: 'a function' },
    },
    mode: { enum: ['auto', 'reusePort', 'pool'], expected: "'auto', 'reusePort' or 'pool'" },
    logger: {
      type: 'object',
      required: ['info', 'warn', 'error'],
      properties: { info: { typeof: 'function' }, warn: { typeof: 'function' }, error: { typeof: 'function' } },
      expected: 'an object with info, warn and error methods',
    },
    shedding: { anyOf: [{ const: false }, sheddingSchema], expected: 'an object or false' },
    metrics: boolean,
    warmup: {
      anyOf: [{ const: false }, {
        type: 'object',
        additionalProperties: false,
        properties: {
          paths,
          requests: { type: 'integer', minimum: 0, expected: 'a whole number from 0' },
          timeout: milliseconds,
        },
      }],
      expected: 'an object or false',
    },
    // Only the URL is the runtime's; @spindle/cache checks the fleet's other options when it starts.
    cache: { type: 'object', expected: 'an object', properties: { url: nonEmpty } },
  },
}
