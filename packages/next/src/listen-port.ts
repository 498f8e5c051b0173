// Next fixes the port of the URLs it builds when it starts, before Fastify listens. When
// the adapter could not know the port then (no `port` option, no PORT, a Spindle worker on
// port 0), it gives Next's server the port Fastify bound, once it has. The fields are
// Next's own (not an API): a Next without them keeps its default port.
import type { FastifyInstance } from 'fastify'

/** The port Fastify's server is bound to, or undefined before it listens (or on a pipe). */
export function boundPort (fastify: FastifyInstance): number | undefined {
  const address = fastify.server.address()
  return typeof address === 'object' && address !== null ? address.port : undefined
}

interface PortHolder { port?: unknown }

/**
 * Sets the port on the servers behind a prepared next() app: the custom server's inner
 * NextServer keeps its options (read when it makes its request server) and the request
 * server its own copy (read on every request).
 */
export function setNextPort (app: unknown, port: number): void {
  let inner: { options?: PortHolder, server?: PortHolder } | undefined
  try {
    inner = (app as { server?: typeof inner }).server
  } catch {
    return
  }
  for (const holder of [inner?.options, inner?.server]) {
    if (holder && typeof holder.port === 'number' && Object.getOwnPropertyDescriptor(holder, 'port')?.writable) holder.port = port
  }
}
