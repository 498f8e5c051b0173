// The JSON schema of every option group of @spindle/cache: the shared store
// (createSharedStore), the httpCache plugin, the fleet tier (startFleet) and the control
// routes. The TypeScript types beside them (store-options.ts, plugin-options.ts,
// fleet/fleet-options.ts, control-routes.ts) say the same in types; defaults and relations
// between options (maxEntryBytes against maxBytes, ...) are filled and checked in code.
// `store` is tested with `instanceOf` against the classes its checker is given
// (plugin-options.ts), so this file imports no class and makes no import cycle.
import type { OptionSchema } from '@spindle/options'

/** `{ type: 'integer', minimum, maximum }` with the words of its message. */
const int = (minimum: number, maximum: number): OptionSchema => ({ type: 'integer', minimum, maximum, expected: `an integer from ${minimum} to ${maximum}` })

const seconds = { type: 'integer', minimum: 0, expected: 'an integer number of seconds >= 0' } as const
const nonEmpty = { type: 'string', minLength: 1, expected: 'a non-empty string' } as const
const fn = { typeof: 'function', expected: 'a function' } as const
// An HTTP field name (RFC 9110 token), in any case: options are lower-cased in code.
const headerName = { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" } as const
const headerNameOrFalse = { anyOf: [headerName, { const: false }], expected: 'a header name or false' } as const
const headerNames = { type: 'array', items: headerName, expected: 'an array of header names' } as const
const MIB = 1024 * 1024

/** createSharedStore's options; `storeOptions` of httpCache and startFleet. */
export const storeSchema: OptionSchema = {
  type: 'object',
  expected: 'an object',
  additionalProperties: false,
  properties: {
    maxBytes: int(256 * 1024, 2 ** 42),
    // At most half of maxBytes: a relation, checked in code.
    maxEntryBytes: { type: 'integer', minimum: 1, expected: 'a positive integer' },
    blockSize: { enum: [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536], expected: 'a power of two from 256 to 65536' },
    maxTags: int(16, 1 << 24),
    maxPending: int(1, 1 << 16),
    lockTimeout: int(10, 600_000),
  },
}

/** The httpCache plugin's options. */
export const httpCacheSchema: OptionSchema = {
  type: 'object',
  expected: 'an object',
  additionalProperties: false,
  properties: {
    store: {
      anyOf: [{ instanceOf: 'SharedStore' }, { instanceOf: 'FleetStore' }],
      expected: 'a SharedStore (createSharedStore / openSharedStore) or a FleetStore (startFleet)',
    },
    sharedName: nonEmpty,
    storeOptions: storeSchema,
    key: fn,
    keyHeaders: headerNames,
    tagHeader: headerNameOrFalse,
    statusHeader: headerNameOrFalse,
    coalesceTimeout: { anyOf: [{ type: 'integer', minimum: 1 }, { const: false }], expected: 'a positive integer of ms or false' },
    staleOnError: seconds,
    heuristicFraction: { type: 'number', minimum: 0, maximum: 1, expected: 'a number from 0 to 1' },
    heuristicMaxAge: seconds,
    shouldCache: fn,
    allowedHosts: {
      type: 'array',
      minItems: 1,
      // A host name or `*.name` (any case), or an IPv6 literal in brackets; no port.
      items: { type: 'string', pattern: "^(?:\\*\\.)?[A-Za-z0-9._~!$&'()*+,;=%-]+$|^\\[[0-9A-Fa-f:.]+\\]$" },
      expected: 'a non-empty array of host names (optionally *.name)',
    },
    credentialHeaders: headerNames,
    maxErrorTtl: seconds,
    targetedCacheControl: headerNameOrFalse,
  },
}

/** startFleet's options for the Redis/Valkey tier (`cache` of a `spindle start` config, but `url`). */
export const fleetSchema: OptionSchema = {
  type: 'object',
  expected: 'an object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    // Only the shape: parseCacheUrl reads the URL itself and names what is wrong with it.
    url: { type: 'string', minLength: 1, expected: 'a redis://, rediss://, valkey:// or valkeys:// URL' },
    prefix: { type: 'string', maxLength: 128, expected: 'a string of at most 128 characters' },
    timeout: int(1, 60_000),
    maxTtl: int(1000, 2 ** 31 * 1000),
    maxEntryBytes: int(1, 512 * MIB),
    compressAbove: int(0, 2 ** 31),
    claimMs: int(1, 600_000),
    waitMs: int(0, 600_000),
    failureThreshold: int(1, 1000),
    openMs: int(1, 600_000),
    reconnectDelay: int(1, 60_000),
    // At least reconnectDelay: a relation, checked in code.
    maxReconnectDelay: int(1, 600_000),
  },
}

/** cacheControlRoutes' options. */
export const controlRoutesSchema: OptionSchema = {
  type: 'object',
  expected: 'an object',
  additionalProperties: false,
  properties: {
    prefix: { type: 'string', pattern: '^(?:/\\S*)?$', expected: "a path starting with '/', or ''" },
    // Its length is checked in code, together with SPINDLE_CACHE_PURGE_TOKEN's, so that a
    // secret never appears in a message.
    token: { type: 'string', expected: 'a string of at least 16 characters' },
  },
}
