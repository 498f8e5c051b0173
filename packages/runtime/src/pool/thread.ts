// What a framework's pool-thread entry uses: its options, the ready signal, and a server
// for Web Request → Response handlers. The task's promise resolves after the response's last
// byte (or the client's abort), so piscina's count of running tasks is the count of live
// requests.
import { STATUS_CODES } from 'node:http'
import { parentPort, threadId, workerData } from 'node:worker_threads'
import { BEAT_INTERVAL, type PoolTask, type PoolThreadData, type ResponseHead, type TaskResult, type ThreadReady } from './protocol.ts'
import { TaskChannel } from './task-channel.ts'
import { headersLikeNode } from './node-headers.ts'
import { warmTickQueue } from '../tick-warmup.ts'

// Started as the entry loads; the ready signal waits for it (tick-warmup.ts says why).
const ticksWarmed = warmTickQueue()

export { TaskChannel } from './task-channel.ts'
export type { PoolTask, RequestHead, ResponseHead, TaskResult } from './protocol.ts'

/** The options the main thread gave this pool thread's entry. */
export function threadOptions<T extends Record<string, unknown>> (): T {
  return (workerData as PoolThreadData).options as T
}

/**
 * Tells the main thread this thread has loaded its framework and takes requests (once
 * nextTick is warm), and starts the heartbeat the main thread's hang watch reads.
 */
export function signalReady (): void {
  void ticksWarmed.then(() => {
    const beat = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT))
    setInterval(() => { Atomics.add(beat, 0, 1) }, BEAT_INTERVAL).unref()
    parentPort?.postMessage({ spindlePool: 'ready', threadId, beat } satisfies ThreadReady)
  })
}

/**
 * A framework's pool entry: its default export, the piscina task, is `poolTask(serve)`.
 * Each task starts in the check phase of the thread's event loop, not inside the message
 * that brought it: Node runs up to 1,000 messages of one port in a row, so a thread that
 * rendered each task inside its message would, while tasks keep coming, not turn its loop
 * for as long as the load lasts. Its timers, the I/O a loader awaits (a fetch), the chunks
 * of a streamed page and the heartbeat would all wait. Deferred, the messages that are there
 * are taken at once, and the renders run once the loop has polled.
 */
export function poolTask (serve: (task: PoolTask) => Promise<TaskResult>): (task: PoolTask) => Promise<TaskResult> {
  return async (task) => {
    await new Promise((resolve) => { setImmediate(resolve) })
    return await serve(task)
  }
}

/** The request of `task` as a Web Request (its headers as Node gives them), its body streamed and its signal tied to the client. */
export function toRequest (channel: TaskChannel): Request {
  const { head } = channel
  const init: RequestInit & { duplex?: 'half' } = { method: head.method, headers: headersLikeNode(head.rawHeaders), signal: channel.signal }
  if (channel.body) {
    init.body = channel.body
    init.duplex = 'half'
  }
  return new Request(head.url, init)
}

/** Runs one task through a Web handler and streams its Response back. */
export async function serveWebTask (task: PoolTask, handle: (request: Request) => Promise<Response>): Promise<TaskResult> {
  const channel = new TaskChannel(task)
  let response: Response
  try {
    response = await handle(toRequest(channel))
  } catch (err) {
    channel.fail(err)
    return undefined
  }
  channel.sendHead(responseHead(response))
  if (!response.body) return await channel.end()
  const reader = response.body.getReader()
  const stop = () => { reader.cancel().catch(() => {}) }
  channel.signal.addEventListener('abort', stop, { once: true })
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done || channel.finished) break
      await channel.write(value)
    }
    return await channel.end()
  } catch (err) {
    channel.fail(err)
    return undefined
  } finally {
    channel.signal.removeEventListener('abort', stop)
  }
}

function responseHead (response: Response): ResponseHead {
  const headers: Array<[string, string]> = []
  for (const [name, value] of response.headers) if (name !== 'set-cookie') headers.push([name, value])
  for (const cookie of response.headers.getSetCookie()) headers.push(['set-cookie', cookie])
  return headOf(response.status, response.statusText, headers)
}

/** A response head; the reason phrase travels only when it is not the standard one for `status`. */
export function headOf (status: number, statusText: string, headers: Array<[string, string]>): ResponseHead {
  return statusText !== '' && statusText !== STATUS_CODES[status] ? { status, statusText, headers } : { status, headers }
}
