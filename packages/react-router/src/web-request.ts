import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * The Fastify request as a Web Request: URL from Fastify's protocol and host (which honour
 * trustProxy), every header, the body as a stream for methods that have one, and a
 * signal that aborts when the client goes away before the response is done.
 */
export function toWebRequest (request: FastifyRequest, reply: FastifyReply): Request {
  const url = `${request.protocol}://${request.host}${request.url}`
  const headers = new Headers()
  const raw = request.raw.rawHeaders
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
  const controller = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) controller.abort() })
  const init: RequestInit & { duplex?: 'half' } = { method: request.method, headers, signal: controller.signal }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    init.body = Readable.toWeb(request.raw) as ReadableStream<Uint8Array>
    init.duplex = 'half'
  }
  return new Request(url, init)
}

/** Sends a Web Response through Fastify, streaming its body and keeping every Set-Cookie. */
export async function sendWebResponse (reply: FastifyReply, response: Response): Promise<void> {
  reply.status(response.status)
  for (const [name, value] of response.headers) {
    if (name === 'set-cookie') continue
    reply.header(name, value)
  }
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) reply.header('set-cookie', cookies)
  if (response.body) await reply.send(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>))
  else await reply.send()
}
