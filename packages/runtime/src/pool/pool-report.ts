// What befalls a render pool's threads, told where an operator reads it: the app's logger,
// and, inside a runtime worker, the runtime's own log through the supervisor too (an app's
// Fastify logger is often off, and a thread lost without a line is invisible).
import { isMainThread, parentPort, workerData } from 'node:worker_threads'
import type { FastifyBaseLogger } from 'fastify'
import { type PoolThreadLoss, serializeError, type WorkerMessage } from '../protocol.ts'

const inRuntimeWorker = !isMainThread && (workerData as { kind?: unknown } | null)?.kind === 'spindle-worker'

/** `details.lost`: the event is the loss of a thread, counted by the supervisor (`spindle_pool_threads_lost_total`). */
export function reportPoolEvent (log: FastifyBaseLogger, level: 'warn' | 'error', message: string, details: { err?: unknown, threadId?: number, lost?: PoolThreadLoss, [key: string]: unknown } = {}): void {
  log[level](details, message)
  if (!inRuntimeWorker) return
  const event: WorkerMessage = {
    type: 'pool-event',
    level,
    message,
    ...(details.err !== undefined ? { error: serializeError(details.err) } : {}),
    ...(details.threadId !== undefined ? { threadId: details.threadId } : {}),
    ...(details.lost !== undefined ? { lost: details.lost } : {}),
  }
  parentPort?.postMessage(event)
}
