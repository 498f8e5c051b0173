// A render pool thread: starts Next.js once, then serves each task (one request) through
// Next's Node handler. Next 16 has no Web handler for Node-runtime routes, so the request
// and response are Node objects made by light-my-request: its response is a real
// http.ServerResponse (writeHead, implicit headers, drain, HEAD/204/304 bodies), which is
// what Next's compression and streaming expect; its socket is a stub, so the protocol
// travels in x-forwarded-proto.
import { Readable } from 'node:stream'
import inject, { type Response as InjectResponse } from 'light-my-request'
import { TaskChannel, signalReady, threadOptions, type PoolTask } from '@spindle/runtime/pool-thread'
import { setNextPort } from './listen-port.ts'
import { loadNext } from './load-next.ts'
import { readStandaloneConfig, withStandaloneConfig } from './standalone.ts'

/** Connection-level headers of the null socket light-my-request writes to: not the client's. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date'])

const { dir, quiet, hostname, port, boundPort } = threadOptions<{ dir: string, quiet: boolean, hostname: string, port: number, boundPort?: Int32Array }>()
const app = loadNext(dir)({ dir, dev: false, quiet, hostname, port, customServer: true })
await withStandaloneConfig(readStandaloneConfig(dir), () => app.prepare())
const handle = app.getRequestHandler()
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

export default async function serve (task: PoolTask): Promise<void> {
  followBoundPort()
  const channel = new TaskChannel(task)
  const { head } = channel
  const origin = new URL(head.url)
  const headers: Record<string, string> = {}
  for (let i = 0; i < head.rawHeaders.length; i += 2) {
    const name = head.rawHeaders[i]!.toLowerCase()
    const value = head.rawHeaders[i + 1]!
    headers[name] = headers[name] === undefined ? value : `${headers[name]}${name === 'cookie' ? '; ' : ', '}${value}`
  }
  headers['x-forwarded-proto'] ??= origin.protocol.slice(0, -1)
  let response: InjectResponse
  try {
    response = await inject(handle as never, {
      method: head.method as never,
      url: origin.pathname + origin.search,
      headers,
      remoteAddress: head.remoteAddress,
      ...(channel.body ? { payload: Readable.fromWeb(channel.body as import('node:stream/web').ReadableStream<Uint8Array>) } : {}),
      payloadAsStream: true,
    })
  } catch (err) {
    channel.fail(err)
    return
  }
  // A client that left: Next sees its response close and aborts the render.
  const stop = () => { response.raw.res.destroy() }
  channel.signal.addEventListener('abort', stop, { once: true })
  const pairs: Array<[string, string]> = []
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue
    if (Array.isArray(value)) for (const v of value) pairs.push([name, String(v)])
    else pairs.push([name, String(value)])
  }
  channel.sendHead({ status: response.statusCode, headers: pairs })
  try {
    for await (const chunk of response.stream()) {
      if (channel.finished) break
      await channel.write(chunk as Buffer)
    }
    await channel.end()
  } catch (err) {
    channel.fail(err)
  } finally {
    channel.signal.removeEventListener('abort', stop)
  }
}
