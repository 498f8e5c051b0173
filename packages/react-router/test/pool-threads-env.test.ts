// SPINDLE_POOL_THREADS (set by `spindle start --mode pool` for its one worker) is the default
// of `threads`; an explicit `threads`, 0 included, wins.
import { afterEach, describe, expect, it } from 'vitest'
import { resolveAdapterOptions } from '../src/options.ts'
import { appDir, buildApp, serverBuild } from './fixtures/build.ts'

afterEach(() => { delete process.env.SPINDLE_POOL_THREADS })

describe('threads from SPINDLE_POOL_THREADS', () => {
  it('is the default of threads, and an explicit threads wins', () => {
    buildApp()
    expect(resolveAdapterOptions({ build: serverBuild }).threads).toBe(0)
    process.env.SPINDLE_POOL_THREADS = '3'
    expect(resolveAdapterOptions({ build: serverBuild }).threads).toBe(3)
    expect(resolveAdapterOptions({ build: serverBuild, threads: 0 }).threads).toBe(0)
    expect(resolveAdapterOptions({ build: serverBuild, threads: 1 }).threads).toBe(1)
    // Vite renders in the Fastify thread in dev mode.
    expect(resolveAdapterOptions({ dev: true, root: appDir }).threads).toBe(0)
    process.env.SPINDLE_POOL_THREADS = 'many'
    expect(resolveAdapterOptions({ build: serverBuild }).threads).toBe(0)
  })

  it('names the variable when what the app passes cannot cross threads', () => {
    process.env.SPINDLE_POOL_THREADS = '2'
    expect(() => resolveAdapterOptions({ build: serverBuild, getLoadContext: () => ({}) as never }))
      .toThrow(expect.objectContaining({ code: 'SPINDLE_REACT_ROUTER_INVALID_OPTION', message: expect.stringContaining('from SPINDLE_POOL_THREADS; set threads: 0') }))
    expect(() => resolveAdapterOptions({ build: { routes: {}, entry: {} } as never }))
      .toThrow(expect.objectContaining({ code: 'SPINDLE_REACT_ROUTER_INVALID_OPTION', message: expect.stringContaining('threads (2, from SPINDLE_POOL_THREADS') }))
  })
})
