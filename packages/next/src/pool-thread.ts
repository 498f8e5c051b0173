// A render pool thread: starts Next.js once, then serves each task (one request) through
// Next's Node handler. Next 16 has no Web handler for Node-runtime routes, so the request
// and response are Node objects made by light-my-request: its response is a real
// http.ServerResponse (writeHead, implicit headers, drain, HEAD/204/304 bodies), which is
// what Next's compression and streaming expect; its socket is a stub, so the protocol
// travels in x-forwarded-proto.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import inject, { type Response as InjectResponse } from 'light-my-request'
import { headOf, poolTask, TaskChannel, signalReady, threadOptions, type PoolTask, type TaskResult } from '@spindle/runtime/pool-thread'
import { setNextPort } from './listen-port.ts'
import { loadNext } from './load-next.ts'
import { readStandaloneConfig, withStandaloneConfig } from './standalone.ts'
import { localeRootTest, localeVaryLines } from './locale-vary.ts'

/** Connection-level headers of the null socket light-my-request writes to: not the client's. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date'])

/**
 * The request's headers by lower-cased name, a repeated one as the list of its values:
 * light-my-request joins such a list as Node's HTTP server does (the first Authorization or
 * User-Agent kept, Cookie values joined with '; ', others with ', ').
 */
function requestHeaders (rawHeaders: readonly string[]): Record<string, string | string[]> {
  // No prototype: a header named `constructor` or `__proto__` is a name like any other.
  const headers: Record<string, string | string[]> = Object.create(null)
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase()
    const value = rawHeaders[i + 1]!
    const seen = headers[name]
    if (seen === undefined) headers[name] = value
    else if (typeof seen === 'string') headers[name] = [seen, value]
    else seen.push(value)
  }
  return headers
}

const { dir, quiet, hostname, port, boundPort } = threadOptions<{ dir: string, quiet: boolean, hostname: string, port: number, boundPort?: Int32Array }>()
const app = loadNext(dir)({ dir, dev: false, quiet, hostname, port, customServer: true })
await withStandaloneConfig(readStandaloneConfig(dir), () => app.prepare())
const handle = app.getRequestHandler()
// Answers to the root that Next gives by the visitor's locale (locale-vary.ts).
const localeRoot = localeRootTest(dir)
signalReady()
let portSet = 0

/** Gives Next the port the main thread's Fastify bound, once it has (listen-port.ts). */
function followBoundPort (): void {
  const bound = boundPort ? Atomics.load(boundPort, 0) : 0
  if (bound !== 0 && bound !== portSet) {
    portSet = bound
    setNextPort(app, bound)
  }
}

async function serve (task: PoolTask): Promise<TaskResult> {
  followBoundPort()
  const channel = new TaskChannel(task)
  const { head } = channel
  // The target as the client sent it: a URL object would turn a backslash into '/' and
  // settle what Next's own redirects are for (a 308 to the clean path). The host was checked on the main thread, so the path
  // starts at the first '/' after it.
  const target = head.url.slice(head.url.indexOf('/', head.url.indexOf('://') + 3))
  const headers = requestHeaders(head.rawHeaders)
  let rawHeaders = head.rawHeaders
  if (headers['x-forwarded-proto'] === undefined) {
    const proto = head.url.slice(0, head.url.indexOf(':'))
    headers['x-forwarded-proto'] = proto
    rawHeaders = [...rawHeaders, 'x-forwarded-proto', proto]
  }
  const hasUserAgent = headers['user-agent'] !== undefined
  // A client that left, before Next wrote its head as after: Next sees its response close
  // and aborts the render. Tied when Next gets the response, not when its head comes: a
  // route that streams once its data is ready would otherwise stream on for no one.
  let stop: (() => void) | undefined
  // light-my-request makes a request like Node's, with two liberties taken back here: a
  // User-Agent of its own where the client sent none, and a target it parsed.
  const dispatch = (req: IncomingMessage, res: ServerResponse) => {
    req.url = target
    req.rawHeaders = rawHeaders
    if (!hasUserAgent) delete req.headers['user-agent']
    stop = () => { res.destroy() }
    // Gone before Next started: nothing to render.
    if (channel.signal.aborted) { stop(); return }
    channel.signal.addEventListener('abort', stop, { once: true })
    return handle(req, res)
  }
  try {
    return await respond(channel, dispatch, target, headers)
  } finally {
    if (stop) channel.signal.removeEventListener('abort', stop)
  }
}

/** Runs Next on the request and streams its response back. */
async function respond (channel: TaskChannel, dispatch: (req: IncomingMessage, res: ServerResponse) => unknown, target: string, headers: Record<string, string | string[]>): Promise<TaskResult> {
  const { head } = channel
  let response: InjectResponse
  try {
    response = await inject(dispatch as never, {
      method: head.method as never,
      url: target,
      headers,
      remoteAddress: head.remoteAddress,
      ...(channel.body ? { payload: Readable.fromWeb(channel.body as import('node:stream/web').ReadableStream<Uint8Array>) } : {}),
      payloadAsStream: true,
    })
  } catch (err) {
    channel.fail(err)
    return undefined
  }
  let pairs: Array<[string, string]> = []
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue
    if (Array.isArray(value)) for (const v of value) pairs.push([name, String(v)])
    else pairs.push([name, String(value)])
  }
  if (localeRoot?.(target)) pairs = localeVaryLines(pairs)
  channel.sendHead(headOf(response.statusCode, response.statusMessage, pairs))
  try {
    for await (const chunk of response.stream()) {
      if (channel.finished) break
      await channel.write(chunk as Buffer)
    }
    return await channel.end()
  } catch (err) {
    channel.fail(err)
    return undefined
  }
}

export default poolTask(serve)
