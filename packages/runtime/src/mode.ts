// Which way requests reach the app's renders: several Fastify workers sharing the port
// through SO_REUSEPORT, or one Fastify worker that sends renders to a pool of threads.
import { SPINDLE_RUNTIME_REUSEPORT_UNSUPPORTED } from './errors.ts'
import { fail } from './option-checks.ts'
import { show } from '@spindle/options'

export type ModeOption = 'auto' | 'reusePort' | 'pool'
export type Mode = 'reusePort' | 'pool'

/** Platforms where the kernel shares one port among listeners and balances connections across them. */
export function hasReusePort (platform: NodeJS.Platform = process.platform): boolean {
  return platform === 'linux'
}

/** The mode to run in and why (logged at start-up). Throws for a bad value, or reusePort where the OS lacks it. */
export function resolveMode (value: unknown, platform: NodeJS.Platform = process.platform): { mode: Mode, reason: string } {
  const input = value ?? 'auto'
  if (input !== 'auto' && input !== 'reusePort' && input !== 'pool') {
    fail(`mode must be 'auto', 'reusePort' or 'pool', got ${show(input)}`)
  }
  if (input === 'reusePort') {
    if (!hasReusePort(platform)) throw new SPINDLE_RUNTIME_REUSEPORT_UNSUPPORTED(platform, process.versions.node)
    return { mode: 'reusePort', reason: 'mode: reusePort' }
  }
  if (input === 'pool') return { mode: 'pool', reason: 'mode: pool' }
  return hasReusePort(platform)
    ? { mode: 'reusePort', reason: `mode: auto, and ${platform} balances one port over threads (SO_REUSEPORT)` }
    : { mode: 'pool', reason: `mode: auto, and ${platform} cannot balance one port over threads (no SO_REUSEPORT)` }
}
