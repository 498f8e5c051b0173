// Entry of every worker thread: builds a Fastify instance, registers the app, listens
// (with SO_REUSEPORT in reusePort mode), ticks the heartbeat the supervisor watches, and drains on request.
import { Server as NetServer } from 'node:net'
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http'
import { Http2ServerRequest, type Http2Session } from 'node:http2'
import { setTimeout as sleep } from 'node:timers/promises'
import { parentPort, workerData } from 'node:worker_threads'
import Fastify, { type FastifyInstance } from 'fastify'
import { loadApp } from './app-loader.ts'
import { guardPublicPort, withPortDefaults } from './public-port.ts'
import { warmUp } from './warmup.ts'
import { announcedWarmupPaths } from './worker-api.ts'
import { warmTickQueue } from './tick-warmup.ts'
import { registerWorkerMetrics, type WorkerMetrics } from './metrics/worker-metrics.ts'
import { kWorkerStatus, loadShedding } from './load-shedding.ts'
import { renderTurns } from './render-turns.ts'
import { kArrivedAt } from './admission/stamps.ts'
import { InflightResponses } from './inflight.ts'
import {
  HEARTBEAT_INTERVAL, METRICS_PUSH_MS, PHASE_CLOSED, PHASE_DRAINING, PHASE_LISTENING, STATUS_HANDED_OFF, STATUS_HANDOFF, STATUS_HEARTBEAT,
  STATUS_INFLIGHT, STATUS_PHASE, STATUS_REQUESTS, serializeError,
  type SupervisorMessage, type WorkerData, type WorkerMessage,
} from './protocol.ts'

const data = workerData as WorkerData
const status = new Int32Array(data.status)
const port = parentPort!

// Timers run between tasks: a loop that keeps ticking is alive, however busy it is.
const heartbeat = setInterval(() => Atomics.add(status, STATUS_HEARTBEAT, 1), HEARTBEAT_INTERVAL)

const inflight = new InflightResponses<ServerResponse>()
/**
 * The open sessions of an HTTP/2 app (Fastify's `http2: true`). Its server has no
 * closeIdleConnections, and a `Connection: close` header means nothing in HTTP/2 (Node drops
 * it with a warning): a session is told to go with GOAWAY (session.close()), after which the
 * client opens a new connection for its next request while the streams in flight finish.
 */
const sessions = new Set<Http2Session>()
let draining = false
let app: FastifyInstance | undefined
let metrics: WorkerMetrics | undefined

function send (message: WorkerMessage): void {
  port.postMessage(message)
}

// 'close' fires once, when the response is fully written or the client went away, also for
// streamed responses whose handler promise resolved long before. One shared function, so
// the hot path allocates no closure per request.
function onResponseClose (this: ServerResponse): void {
  inflight.delete(this)
  Atomics.sub(status, STATUS_INFLIGHT, 1)
  metrics?.observe(this)
}

/**
 * Sends the request metrics: in answer to the supervisor's request `requestId`, or unasked
 * (0: every METRICS_PUSH_MS, and the final figures once drained).
 */
function sendMetrics (requestId: number): void {
  send({ type: 'metrics', requestId, metrics: metrics?.snapshot() ?? [] })
}

/** The warm-up with the pages the app's adapters announced (worker-api.ts) after its own, unless the configuration named its paths. */
function withAnnouncedPaths (warmup: Exclude<WorkerData['warmup'], false>): Exclude<WorkerData['warmup'], false> {
  if (!warmup.appPaths) return warmup
  const paths = [...warmup.paths]
  for (const path of announcedWarmupPaths()) if (!paths.includes(path)) paths.push(path)
  return { ...warmup, paths }
}

/** Closes the request's connection once it is answered: `Connection: close`, or GOAWAY for HTTP/2. */
function closeAfter (req: IncomingMessage | Http2ServerRequest, res: ServerResponse): void {
  if (req instanceof Http2ServerRequest) req.stream.session?.close()
  else res.setHeader('connection', 'close')
}

/** Keeps the app's HTTP/2 sessions, for the drain to close (an HTTP/1 server emits no 'session'). */
function trackSessions (server: HttpServer): void {
  server.on('session', (session: Http2Session) => {
    sessions.add(session)
    session.once('close', () => sessions.delete(session))
  })
}

/**
 * Counts, stamps and registers every request before Fastify sees it. `stampArrival`: the
 * arrival time is read by load shedding and the request metrics; with both off nothing
 * reads it (render turns fall back to the time the request reaches them, the same turn of
 * the event loop for a route without asynchronous hooks).
 */
function trackRequests (server: HttpServer, stampArrival: boolean): void {
  // Prepended so it runs before Fastify's handler, which may write the response synchronously.
  server.prependListener('request', (req: IncomingMessage & { [kArrivedAt]?: number }, res: ServerResponse) => {
    // Load shedding bounds how long a request waits between here and its handler.
    if (stampArrival) req[kArrivedAt] = performance.now()
    Atomics.add(status, STATUS_INFLIGHT, 1)
    Atomics.add(status, STATUS_REQUESTS, 1)
    inflight.add(res)
    if (draining) closeAfter(req, res)
    else if (Atomics.load(status, STATUS_HANDOFF) !== 0 && Atomics.compareExchange(status, STATUS_HANDOFF, 1, 0) === 1) {
      // Connection balance: the supervisor saw this worker busier than a sibling. The client
      // reconnects after this response and the kernel deals the connection out again.
      closeAfter(req, res)
      Atomics.add(status, STATUS_HANDED_OFF, 1)
    }
    res.on('close', onResponseClose)
  })
}

async function start (): Promise<void> {
  await warmTickQueue()
  const { plugin, options } = await loadApp(data.appPath)
  // A request that arrives on a kept-alive connection while draining is served (with
  // Connection: close) rather than refused.
  app = Fastify({ ...withPortDefaults(options), return503OnClosing: false })
  guardPublicPort(app)
  trackRequests(app.server, Boolean(data.shedding) || data.metrics)
  trackSessions(app.server)
  // Registered before the app so its preHandler runs ahead of the app's own, after its onRequest.
  if (data.shedding) await app.register(loadShedding, { ...data.shedding, [kWorkerStatus]: status })
  // Without shedding the adapters' renders still take turns, none refused (render-turns.ts).
  else await app.register(renderTurns)
  // After shedding, so its preHandler sees only admitted requests; before the app, so it sees all of them.
  if (data.metrics) metrics = registerWorkerMetrics(app, Boolean(data.shedding))
  await app.register(plugin, data.appOptions)
  const warmup = data.warmup ? await warmUp(app, withAnnouncedPaths(data.warmup)) : undefined
  if (data.handover) {
    send({ type: 'prepared' })
    await listenCalled
  }
  await listen(app)
  const address = app.server.address()
  const boundPort = typeof address === 'object' && address ? address.port : data.port
  Atomics.store(status, STATUS_PHASE, PHASE_LISTENING)
  send({ type: 'listening', port: boundPort, address: data.host, ...(warmup ? { warmup } : {}) })
  if (metrics) setInterval(() => { sendMetrics(0) }, METRICS_PUSH_MS).unref()
}

function openConnections (server: HttpServer): Promise<number> {
  return new Promise((resolve) => { server.getConnections((err, count) => { resolve(err ? 0 : count) }) })
}

let allowListen: () => void = () => {}
const listenCalled = new Promise<void>((resolve) => { allowListen = resolve })

/** ms a handover replacement keeps trying while the port it takes over is still being freed. */
const HANDOVER_RETRY_FOR = 2000

async function listen (fastify: FastifyInstance): Promise<void> {
  // reusePort goes straight to net.Server#listen; Fastify's types do not list it yet.
  const listenOptions = { host: data.host, port: data.port, reusePort: data.reusePort }
  const until = Date.now() + HANDOVER_RETRY_FOR
  for (;;) {
    try {
      await fastify.listen(listenOptions)
      return
    } catch (err) {
      if (!data.handover || (err as { code?: string }).code !== 'EADDRINUSE' || Date.now() > until) throw err
      await sleep(5)
    }
  }
}

/** An HTTP/2 server (Fastify's `http2: true`) lacks the HTTP/1 server's connection methods. */
function isHttp1 (server: HttpServer): boolean {
  return typeof (server as Partial<HttpServer>).closeIdleConnections === 'function'
}

/** Closes idle keep-alive sockets. An HTTP/2 server has none: after GOAWAY a session ends with its last stream. */
function closeIdle (server: HttpServer): void {
  if (isHttp1(server)) server.closeIdleConnections()
}

async function drain (timeout: number, idleGrace: number): Promise<void> {
  if (draining) return
  draining = true
  Atomics.store(status, STATUS_PHASE, PHASE_DRAINING)
  const deadline = Date.now() + timeout
  const server = app?.server
  if (server) {
    for (const res of inflight) if (!res.headersSent && !(res.req instanceof Http2ServerRequest)) res.setHeader('connection', 'close')
    // Stop accepting but keep open connections: http.Server#close would also cut idle
    // keep-alive sockets at once, racing clients that are about to reuse them.
    if (server.listening) NetServer.prototype.close.call(server)
    // GOAWAY is HTTP/2's own notice: no client sends on a session after it, so no grace.
    for (const session of sessions) session.close()
    // Keep-alive clients send their next request within this grace and are told to close;
    // the wait ends early once every connection has closed.
    const graceEnd = Date.now() + Math.min(idleGrace, timeout / 2)
    while (Date.now() < graceEnd && await openConnections(server) > 0) await sleep(25)
    closeIdle(server)
    while (inflight.size > 0 && Date.now() < deadline) await sleep(10)
    closeIdle(server)
  }
  const unfinished = inflight.size
  if (server && unfinished > 0) {
    if (isHttp1(server)) server.closeAllConnections()
    for (const session of sessions) session.destroy()
  }
  if (app) {
    const closing = app.close()
    // Unreferenced, so a close that finishes early lets the thread end at once.
    await Promise.race([closing, sleep(Math.max(100, deadline - Date.now()), undefined, { ref: false })]).catch(() => {})
  }
  Atomics.store(status, STATUS_PHASE, PHASE_CLOSED)
  // Its final figures, every response counted: they outlive the thread in its slot's totals.
  if (metrics) sendMetrics(0)
  send({ type: 'drained', unfinished })
  clearInterval(heartbeat)
  port.removeAllListeners('message')
  port.unref()
}

// An unhandled rejection would end the thread (Node's default), and with it every request
// the worker holds: it is one request's bug, so the supervisor logs it and the worker serves on.
process.on('unhandledRejection', (reason: unknown) => {
  send({ type: 'unhandled-rejection', error: serializeError(reason) })
})

port.on('message', (message: SupervisorMessage) => {
  if (message.type === 'drain') void drain(message.timeout, message.idleGrace)
  else if (message.type === 'listen') allowListen()
  else if (message.type === 'unlisten') {
    // Stops accepting; open connections stay. The descriptor is closed once this returns,
    // so the replacement waiting for the port can take it.
    if (app?.server.listening) NetServer.prototype.close.call(app.server)
    send({ type: 'unlistened' })
  }
  else if (message.type === 'metrics') sendMetrics(message.requestId)
})

start().catch((err: unknown) => {
  send({ type: 'start-failed', error: serializeError(err) })
  clearInterval(heartbeat)
  port.removeAllListeners('message')
  port.unref()
})
