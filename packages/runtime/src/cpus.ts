import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'

/**
 * CPUs this process may use: the cgroup v2 CPU quota (cpu.max) when the container has
 * one, otherwise the cores the OS makes available. A quota of 1.5 CPUs gives 2.
 */
export function defaultWorkerCount (cgroupRoot = '/sys/fs/cgroup'): number {
  const cores = availableParallelism()
  const quota = cgroupCpuQuota(cgroupRoot)
  if (quota === undefined) return cores
  return Math.max(1, Math.min(cores, Math.ceil(quota)))
}

/** The cgroup v2 CPU quota in CPUs (e.g. 2 for "200000 100000"), or undefined for none. */
export function cgroupCpuQuota (cgroupRoot = '/sys/fs/cgroup'): number | undefined {
  let text: string
  try {
    text = readFileSync(`${cgroupRoot}/cpu.max`, 'utf8')
  } catch {
    return undefined
  }
  return parseCpuMax(text)
}

export function parseCpuMax (text: string): number | undefined {
  const [quota, period] = text.trim().split(/\s+/)
  if (quota === undefined || quota === 'max') return undefined
  const q = Number(quota)
  const p = Number(period ?? 100000)
  if (!Number.isFinite(q) || !Number.isFinite(p) || q <= 0 || p <= 0) return undefined
  return q / p
}
