// Frees the buffers of a pool thread's response on the main thread as soon as its last byte
// has left, when nothing but Node.js and Fastify can have seen them.
//
// Why: every response body comes from its pool thread as a transferred ArrayBuffer, and V8
// counts each one as external memory until a garbage collection finds it dead. The main
// thread's own heap is small (it holds Fastify, not the framework), so that external memory
// is what fills it: on the React Router example (45 KB pages, 2 pool threads, a closed loop
// of 16 connections) the main thread ran 14-16 full mark-compact collections in 6 s and no
// young-generation one. Detached once written, the bodies never pile up: 0 mark-compacts in
// the same 6 s, and the process spent about 100 µs of CPU less per request (the main thread
// 25 µs, V8's helper threads the rest).
//
// When: only where no `onSend` hook runs for the route. Such a hook is handed the body and
// may keep it (a cache, a logger); a detached buffer would read as empty there. Fastify does
// not expose a route's hooks, so they are read from its route context, found once by its
// symbol's description; where that is not found (another Fastify major), nothing is freed
// early and the collector frees the bodies as before. Code that watches the raw response
// instead (@spindle/cache's httpCache, which copies each chunk as it is written; a logger's
// 'finish' listener added in onRequest) has had its turn: the buffers are detached by a
// 'finish' listener added when the response's head arrives, after theirs.
import type { FastifyReply, FastifyRequest } from 'fastify'

let contextKey: symbol | null | undefined

/** Whether no `onSend` hook will see the payload of `request`'s reply. */
function bodyIsPrivate (request: FastifyRequest): boolean {
  if (contextKey === undefined) {
    contextKey = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context') ?? null
  }
  if (contextKey === null) return false
  const context = (request as unknown as Record<symbol, { onSend?: unknown } | undefined>)[contextKey]
  return context !== undefined && 'onSend' in context && context.onSend === null
}

/**
 * Where no `onSend` hook will see `request`'s reply: an array for the response's buffers,
 * which are detached once the reply's last byte was handed to the socket ('finish'; not if
 * the client left first). Otherwise undefined, and the collector frees them.
 */
export function buffersFreedWhenWritten (request: FastifyRequest, reply: FastifyReply): ArrayBuffer[] | undefined {
  if (!bodyIsPrivate(request)) return undefined
  const buffers: ArrayBuffer[] = []
  reply.raw.once('finish', () => {
    for (const b of buffers) if (!b.detached) b.transfer(0)
  })
  return buffers
}
