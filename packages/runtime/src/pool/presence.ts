// What a render pool and the load-shedding plugin know of each other, through globals keyed
// by Symbol.for so that two copies of this package in one app still agree.
//
// - Whether a render pool runs in this thread, and with how many threads. While one runs,
//   the pool's own admission (from its exact queue of free slots) decides for the renders it
//   serves, and the thread's render queue, built for renders that run on this event loop two
//   at a time, must not hold them back a second time. The warm-up sends each of its requests
//   once per pool thread (warmup.ts).
// - The plugin's shed reporter, a decoration of the Fastify instance it is registered in: the
//   pool answers the renders it refuses through it, so they are answered and counted exactly
//   like the plugin's own, and its admission state reaches the worker's status block. Per
//   instance, not per thread: a pool reports to the plugin whose hooks cover its routes.
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { AdmissionState } from '../admission/controller.ts'

const kPools = Symbol.for('spindle.renderPools')
const kReporter = Symbol.for('spindle.poolShedReporter')
const holder = globalThis as { [kPools]?: number }

/** Counts the threads of a pool that starts (+threads) or closes (-threads) in this thread. */
export function countRenderPool (threads: number): void {
  holder[kPools] = Math.max(0, (holder[kPools] ?? 0) + threads)
}

/** Whether any render pool runs in this thread. */
export function renderPoolRunning (): boolean {
  return renderPoolThreads() > 0
}

/** The threads of the render pools that run in this thread (0 without one). */
export function renderPoolThreads (): number {
  return holder[kPools] ?? 0
}

/** Why a pool refuses a render: the admission controller's verdicts. */
export type PoolShedReason = 'backlog' | 'overload'

/** How a render pool reports its admission to the load-shedding plugin. */
export interface PoolShedReporter {
  /** The pool's admission state changed. */
  state (state: AdmissionState): void
  /**
   * Answers `reply` as shed (503 and the plugin's headers) and counts it under `reason`.
   * `storm`: the pool's controller sees a retry storm, so an immediate retry's 503 may be held.
   */
  shed (reply: FastifyReply, reason: PoolShedReason, storm: boolean): void
  /**
   * Whether the process restarts a worker (under `spindle start`: a replacement starts up
   * beside this worker): bursts may then wait longer (admission/controller.ts, RESTART_STRETCH).
   */
  restarting (): boolean
}

/** Made by the load-shedding plugin for the instance it is registered in (and its children). */
export function installPoolShedReporter (fastify: FastifyInstance, reporter: PoolShedReporter): void {
  fastify.decorate(kReporter as unknown as string, reporter)
}

/** The reporter of the load-shedding plugin that covers `server`'s routes, if one is registered. */
export function poolShedReporter (server: FastifyInstance): PoolShedReporter | undefined {
  return (server as unknown as { [kReporter]?: PoolShedReporter })[kReporter]
}
