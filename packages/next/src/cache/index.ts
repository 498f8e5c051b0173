export { withSpindle } from './with-spindle.ts'
export type { SpindleCacheSettings, SpindleNextConfig, WithSpindleOptions } from './with-spindle.ts'
export { SPINDLE_NEXT_CACHE_CONFLICT, SPINDLE_NEXT_CACHE_INVALID_CONFIG } from './errors.ts'
