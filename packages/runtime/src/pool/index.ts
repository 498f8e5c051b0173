export { RenderPool, type RenderPoolOptions } from './render-pool.ts'
export { requestHead } from './request-head.ts'
export { CHUNK_BYTES, WINDOW } from './protocol.ts'
export type { RequestHead, ResponseHead, PoolTask } from './protocol.ts'
