/**
 * Decides what a worker's observed state means. A worker is judged by its heartbeat,
 * which its event loop ticks between tasks: a busy loop (high utilization) keeps ticking
 * and is healthy; only a loop that stops ticking is unresponsive, then stalled.
 */
export type Verdict = 'healthy' | 'unresponsive' | 'stalled' | 'heap-limit'

export interface HealthSample {
  /** Milliseconds since the heartbeat last changed, as seen by the supervisor. */
  silentFor: number
  heapUsed?: number
  heapLimit?: number
}

export interface HealthPolicy {
  heartbeatTimeout: number
  stallTimeout: number
  heapLimitRatio: number
}

export function assess (sample: HealthSample, policy: HealthPolicy): Verdict {
  if (sample.silentFor >= policy.stallTimeout) return 'stalled'
  if (sample.heapUsed !== undefined && sample.heapLimit !== undefined && sample.heapLimit > 0 &&
      sample.heapUsed / sample.heapLimit >= policy.heapLimitRatio) {
    return 'heap-limit'
  }
  if (sample.silentFor >= policy.heartbeatTimeout) return 'unresponsive'
  return 'healthy'
}

/** Restart delay after `crashes` consecutive crashes: restartDelay doubled each time, capped. */
export function restartDelayFor (crashes: number, restartDelay: number, maxRestartDelay: number): number {
  return Math.min(maxRestartDelay, restartDelay * 2 ** Math.max(0, crashes - 1))
}
