// An event stream's head leaves at once, not with its first event: an EventSource opens on
// the head, and a stream whose first event comes late would look like a hung request. Used
// where a framework's Web Response is handed to Fastify as a Node stream (the render pool's
// forward.ts, @spindle/react-router in Fastify's thread).
import type { FastifyReply } from 'fastify'

/** With `contentType` an event stream's, sends the head as soon as the body is piped to the response. */
export function flushEventStreamHead (reply: FastifyReply, contentType: unknown): void {
  if (/^text\/event-stream\b/i.test(String(contentType ?? ''))) reply.raw.once('pipe', () => { reply.raw.flushHeaders() })
}
