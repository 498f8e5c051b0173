// Load shedding: under pressure, answer renders with an immediate 503 + Retry-After instead
// of queueing them behind a busy event loop. @fastify/under-pressure samples the pressure,
// in a context of its own, so an app that registers it too (for a status route, say) does
// not clash with it; the decision is taken in preHandler, after the app's onRequest hooks (a
// cache answering there is served) and before the handler (a render never starts).
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import { AdmissionController, ADMISSION_STATES, type AdmissionState } from './admission/controller.ts'
import { loopActiveMs, RenderQueue } from './admission/render-queue.ts'
import { isRetry, markShed, type ShedSocket } from './admission/retry.ts'
import { kArrivedAt, kStartedAt, type Stamped } from './admission/stamps.ts'
import { installPoolShedReporter, renderPoolRunning } from './pool/presence.ts'
import { resolveSheddingOptions, type LoadSheddingOptions } from './shed-options.ts'
import {
  SHED_REASONS, STATUS_ADMISSION, STATUS_PRESSURE, STATUS_RESTARTING, STATUS_SHED_FIRST, type ShedReason,
} from './protocol.ts'

export type { LoadSheddingOptions } from './shed-options.ts'
export type { ShedReason } from './protocol.ts'

/** Internal option the runtime's worker passes: its status block (shared with the supervisor). */
export const kWorkerStatus = Symbol.for('spindle.workerStatus')

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: this route is never shed (cheap routes, probes). */
    shed?: boolean
  }
  interface FastifyInstance {
    /** Shed requests since start, by reason. */
    shedCounts: () => Record<ShedReason, number>
  }
}

type Options = LoadSheddingOptions & { [kWorkerStatus]?: Int32Array }
/** What @fastify/under-pressure's `memoryUsage()` answers: its last sample. */
interface Sample { eventLoopDelay: number, heapUsed: number, eventLoopUtilized: number }
const ADMIT = 0
/** 503s held at once at most; past it they go out at once (a timer each is all they cost). */
const MAX_HELD = 10_000
const SHED_BODY = 'Service Unavailable\n'

async function plugin (fastify: FastifyInstance, input: Options): Promise<void> {
  const status = input[kWorkerStatus]
  // A runtime worker (it passes its status buffer) gets options serve() checked already.
  const opts = resolveSheddingOptions(input, '', status !== undefined)
  const local = new Float64Array(SHED_REASONS.length)
  const prefixes = opts.staticPrefixes
  const retryAfter = String(opts.retryAfter)
  const maxQueueTime = opts.maxQueueTime
  const maxBacklog = opts.maxBacklog
  const reportState = (state: AdmissionState): void => {
    if (status) Atomics.store(status, STATUS_ADMISSION, ADMISSION_STATES.indexOf(state))
  }
  const controller = maxBacklog > 0 ? new AdmissionController({ budget: maxBacklog, target: opts.overloadBacklog }, undefined, loopActiveMs) : undefined
  const queue = controller ? new RenderQueue(controller, maxQueueTime, shed, reportState) : undefined
  // A render pool serving this instance's routes sheds and reports through the same path (pool/presence.ts).
  const restarting = (): boolean => status !== undefined && Atomics.load(status, STATUS_RESTARTING) !== 0
  installPoolShedReporter(fastify, { state: reportState, shed, restarting })

  // under-pressure only samples here: registered in a context of its own (not the app's),
  // its decorators stay out of the app's way, and the thresholds are judged in preHandler.
  let sample: () => Sample = () => ({ eventLoopDelay: 0, heapUsed: 0, eventLoopUtilized: 0 })
  await fastify.register(async (gauge) => {
    // 'interval' judges the last sample, not the average since start.
    await gauge.register(underPressure, { sampleInterval: opts.sampleInterval, eventLoopUtilizationMode: 'interval' })
    const own = gauge as unknown as { memoryUsage: () => Sample }
    sample = () => own.memoryUsage()
  })
  const maxEventLoopDelay = opts.maxEventLoopDelay
  const maxHeapUsedBytes = opts.maxHeapUsedBytes
  const maxEventLoopUtilization = opts.maxEventLoopUtilization
  const judged = maxEventLoopDelay > 0 || maxHeapUsedBytes > 0 || maxEventLoopUtilization > 0

  // The first samples cover start-up (imports, registration), not load: judge only samples
  // taken wholly after the server listens.
  let armedAt = Infinity
  fastify.addHook('onListen', (done) => {
    armedAt = performance.now() + 2 * opts.sampleInterval
    done()
  })

  fastify.decorate('shedCounts', () => {
    const out = {} as Record<ShedReason, number>
    SHED_REASONS.forEach((reason, i) => { out[reason] = local[i]! })
    return out
  })

  // Outside the runtime there is no raw-request stamp: the first onRequest hook is the
  // earliest point a plugin sees.
  if (!status) {
    fastify.addHook('onRequest', (req, _reply, done) => {
      (req.raw as Stamped)[kArrivedAt] ??= performance.now()
      done()
    })
  }

  fastify.addHook('preHandler', (req, reply, done) => {
    // The route's config: read once, as request.routeOptions builds a new object on every read.
    const route = req.routeOptions.config
    const reason = reasonToShed(req, route)
    // A render pool in this thread admits its renders itself (pool/presence.ts): the queue steps aside.
    if (reason === undefined || (reason === ADMIT && (!queue || renderPoolRunning()))) {
      (req.raw as Stamped)[kStartedAt] = performance.now()
      done()
      return
    }
    if (reason !== ADMIT) {
      queue?.rejected(reply, performance.now())
      shed(reply, reason)
      return
    }
    const now = performance.now()
    // While the process restarts a worker, bursts may wait longer (protocol.ts, STATUS_RESTARTING).
    controller!.restarting = restarting()
    // The route's config stands for the route: requests of a route measured cheap start at
    // once (render-queue.ts). Not a framework's catch-all (`render: true`): its cheap answers
    // (a prerendered page) and its renders share one route, and every render takes its turn.
    const full = queue!.admit(reply, done as () => void, (req.raw as Stamped)[kArrivedAt] ?? now, now, route.render === true ? undefined : route)
    if (full) shed(reply, full)
  })

  const retryHold = opts.retryHold
  let held = 0

  function shed (reply: FastifyReply, reason: ShedReason, storm: boolean = queue === undefined || queue.storm): void {
    const i = SHED_REASONS.indexOf(reason)
    local[i]!++
    if (status) Atomics.add(status, STATUS_SHED_FIRST + i, 1)
    reply.code(503).header('retry-after', retryAfter).header('cache-control', 'no-store')
      .header('x-spindle-shed', reason).type('text/plain; charset=utf-8')
    const socket = reply.raw.socket as ShedSocket | null
    // Only in a retry storm: an open-loop client whose next request happens to follow its 503
    // on the same connection gets its answer at once.
    if (retryHold > 0 && storm && isRetry(socket, performance.now()) && held < MAX_HELD) {
      // An immediate retry: its 503 waits, so the client's next try comes retryHold later.
      held++
      setTimeout(() => {
        held--
        sendShed(reply, socket)
      }, retryHold).unref()
      return
    }
    sendShed(reply, socket)
  }

  function sendShed (reply: FastifyReply, socket: ShedSocket | null): void {
    if (reply.raw.destroyed) return
    reply.send(SHED_BODY)
    markShed(socket, performance.now())
  }

  /** undefined: never shed (not a render); ADMIT: a render let in; else why it is shed. */
  function reasonToShed (req: FastifyRequest, route: FastifyContextConfig): ShedReason | typeof ADMIT | undefined {
    if (route.shed === false) return undefined
    const url = req.url
    for (let i = 0; i < prefixes.length; i++) if (url.startsWith(prefixes[i]!)) return undefined
    const now = performance.now()
    if (judged && now > armedAt) {
      const m = sample()
      if (maxEventLoopDelay > 0 && m.eventLoopDelay > maxEventLoopDelay) return 'eventLoopDelay'
      if (maxHeapUsedBytes > 0 && m.heapUsed > maxHeapUsedBytes) return 'heapUsedBytes'
      if (maxEventLoopUtilization > 0 && m.eventLoopUtilized > maxEventLoopUtilization) return 'eventLoopUtilization'
    }
    if (status && Atomics.load(status, STATUS_PRESSURE) !== 0) return 'supervisor'
    const arrived = (req.raw as Stamped)[kArrivedAt]
    if (maxQueueTime > 0 && arrived !== undefined && now - arrived > maxQueueTime) return 'queueTime'
    return ADMIT
  }
}

/**
 * Sheds framework renders under overload with 503 + Retry-After; cache hits answered in
 * onRequest, static prefixes and routes with `config: { shed: false }` are always served.
 * On by default in `serve()` workers; register it yourself in a single Fastify process.
 */
export const loadShedding = fp(plugin, { name: '@spindle/load-shedding', fastify: '5.x' })
