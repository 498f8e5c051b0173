export { RenderPool, renderPoolStats, type RenderPoolOptions, type RenderPoolStats } from './render-pool.ts'
export { requestHead } from './request-head.ts'
export { CHUNK_BYTES, WINDOW } from './protocol.ts'
export type { RequestHead, ResponseHead, PoolTask } from './protocol.ts'
export { poolOptionProperties, POOL_DEFAULTS, poolThreadsFromEnv } from './adapter-options.ts'
// For the adapters' requests in either mode (the Host check, a body left unread), exported
// from the entry every adapter already loads.
export { hasRepeatedHost, isValidHost } from '../valid-host.ts'
export { discardUnreadBody } from '../unread-body.ts'
export { BodyLength, declaredLength } from '../body-length.ts'
export { flushEventStreamHead } from '../event-stream-head.ts'
export { droppedOnHttp2 } from '../connection-headers.ts'
export { http1Headers } from '../http2-headers.ts'
// For the adapters' dev servers (Vite's and Next's HMR websockets) on Fastify's server.
export { hmrUpgrades, type HmrUpgrades } from '../hmr-upgrades.ts'
