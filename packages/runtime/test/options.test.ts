import { describe, expect, it } from 'vitest'
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serve, defaultWorkerCount, type ServeOptions } from '@spindle/runtime'
import { resolveOptions } from '../src/options.ts'
import { resolveMode } from '../src/mode.ts'
import { fixture } from './helpers.ts'

const app = fixture('app.js')

async function rejection (options: Record<string, unknown>): Promise<{ code: string, message: string }> {
  try {
    const server = await serve({ app, port: 0, controlPort: false, handleSignals: false, ...options } as ServeOptions)
    await server.close()
  } catch (err) {
    return err as { code: string, message: string }
  }
  throw new Error('serve() accepted ' + JSON.stringify(options))
}

describe('serve() options', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ workers: 0 }, 'workers must be a whole number from 1 to 1024, got 0'],
    [{ workers: 2000 }, 'workers must be a whole number from 1 to 1024, got 2000'],
    [{ workers: 1.5 }, 'workers must be a whole number from 1 to 1024, got 1.5'],
    [{ workers: '2' }, 'workers must be a whole number from 1 to 1024, got "2"'],
    [{ port: 70000 }, 'port must be an integer from 0 to 65535, got 70000'],
    [{ controlPort: -5 }, 'controlPort must be an integer from 0 to 65535, or false, got -5'],
    [{ host: '' }, 'host must be a non-empty string, got ""'],
    [{ shutdownTimeout: 0 }, 'shutdownTimeout must be a positive number of milliseconds, at most 2147483647, got 0'],
    [{ startTimeout: Infinity }, 'startTimeout must be a positive number of milliseconds, at most 2147483647, got Infinity'],
    // Past 2^31-1 ms Node's timers fire after 1 ms: a start, a drain or a restart delay would end at once.
    [{ startTimeout: 3e9 }, 'startTimeout must be a positive number of milliseconds, at most 2147483647, got 3000000000'],
    [{ shutdownTimeout: 2 ** 31 }, 'shutdownTimeout must be a positive number of milliseconds, at most 2147483647, got 2147483648'],
    [{ restartDelay: 3e9, maxRestartDelay: 3e9 }, 'restartDelay must be a positive number of milliseconds, at most 2147483647, got 3000000000'],
    [{ warmup: { timeout: 3e9 } }, 'warmup.timeout must be a positive number of milliseconds, at most 2147483647, got 3000000000'],
    [{ shedding: { retryHold: 3e9 } }, 'shedding.retryHold must be a number of milliseconds from 0 to 2147483647, got 3000000000'],
    [{ heartbeatTimeout: 30 }, 'heartbeatTimeout must be a number of milliseconds from 200 (four 50 ms heartbeats) to 2147483647, got 30'],
    [{ heartbeatTimeout: 199 }, 'heartbeatTimeout must be a number of milliseconds from 200 (four 50 ms heartbeats) to 2147483647, got 199'],
    [{ maxHeapMb: 2 }, 'maxHeapMb must be a whole number of MB from 32, got 2'],
    [{ maxHeapMb: 31 }, 'maxHeapMb must be a whole number of MB from 32, got 31'],
    [{ heartbeatTimeout: 2000, stallTimeout: 1000 }, 'stallTimeout (1000) must be at least heartbeatTimeout (2000)'],
    [{ heapLimitRatio: 1.5 }, 'heapLimitRatio must be a number above 0 and at most 1, got 1.5'],
    [{ workers: 2, minReadyWorkers: 3 }, 'minReadyWorkers must be at most workers (2), got 3'],
    [{ restartDelay: 500, maxRestartDelay: 100 }, 'maxRestartDelay (100) must be at least restartDelay (500)'],
    [{ handleSignals: 'yes' }, 'handleSignals must be a boolean, got "yes"'],
    [{ balanceConnections: 1 }, 'balanceConnections must be a boolean, got 1'],
    [{ memoryReducer: 'off' }, 'memoryReducer must be a boolean, got "off"'],
    [{ parallelScavenge: 'no' }, 'parallelScavenge must be a boolean, got "no"'],
    [{ youngGenerationMb: 2 }, "youngGenerationMb must be 0 (V8's default) or a whole number of at least 3, got 2"],
    [{ youngGenerationMb: 16.5 }, "youngGenerationMb must be 0 (V8's default) or a whole number of at least 3, got 16.5"],
    [{ mode: 'dispatch' }, "mode must be 'auto', 'reusePort' or 'pool', got \"dispatch\""],
    [{ mode: 'reuseport' }, "mode must be 'auto', 'reusePort' or 'pool', got \"reuseport\""],
    [{ mode: 'pool', workers: 2, minReadyWorkers: 2 }, 'minReadyWorkers must be 1 in pool mode (one Fastify worker), got 2'],
    [{ env: { A: 1 } }, 'env.A must be a string, got 1'],
    [{ controlRoutes: { '/x': () => {} } }, "controlRoutes keys must be 'METHOD /path', e.g. 'GET /version', got \"/x\""],
    [{ controlRoutes: { 'GET /x': 'text' } }, 'controlRoutes.GET /x must be a function, got "text"'],
    [{ logger: { info () {} } }, 'logger must be an object with info, warn and error methods, got object'],
    [{ shedding: { maxBacklog: -1 } }, 'shedding.maxBacklog must be a number of milliseconds from 0 to 2147483647, got -1'],
    [{ warmup: { paths: ['/', 'x'] } }, "warmup.paths.1 must be a path starting with '/', got \"x\""],
    [{ warmup: { paths: '/' } }, "warmup.paths must be an array of paths starting with '/', got \"/\""],
    [{ warmup: { tries: 3 } }, 'unknown option "warmup.tries"'],
    [{ cache: { url: '' } }, 'cache.url must be a non-empty string, got ""'],
    [{ app: undefined }, 'app must be the path of a module whose default export is a Fastify plugin, got undefined'],
    [{ wrokers: 2 }, 'unknown option "wrokers"'],
    [{ app: '' }, 'app must be the path of a module whose default export is a Fastify plugin, got ""'],
    [{ app: new URL('http://example.test/app.js') }, 'app must be a path or a file: URL'],
  ]
  for (const [options, message] of cases) {
    it(`rejects ${JSON.stringify(options)}`, async () => {
      const err = await rejection(options)
      expect(err.code).toBe('SPINDLE_RUNTIME_INVALID_OPTION')
      expect(err.message).toContain(message)
    })
  }

  it('refuses appOptions and shared values no worker could be given a copy of, naming the property and what it is', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ appOptions: { onEvent: () => 1 } }, 'appOptions.onEvent must be structured-cloneable (each worker gets a copy), got a function'],
      [{ appOptions: { db: { pool: { connect () {} } } } }, 'appOptions.db.pool.connect must be structured-cloneable (each worker gets a copy), got a function'],
      [{ appOptions: { base: new URL('http://example.test/') } }, 'appOptions.base must be structured-cloneable (each worker gets a copy), got URL'],
      [{ shared: { tag: Symbol('tag') } }, 'shared.tag must be structured-cloneable (each worker gets a copy), got a symbol'],
      [{ shared: { log: () => {} } }, 'shared.log must be structured-cloneable (each worker gets a copy), got a function'],
    ]
    for (const [options, message] of cases) {
      const err = await rejection(options)
      expect(err.code).toBe('SPINDLE_RUNTIME_INVALID_OPTION')
      expect(err.message).toContain(message)
    }
    // What a structured clone carries is accepted.
    expect(() => resolveOptions({ app, appOptions: { when: new Date(0), tags: new Set(['a']) }, shared: { counter: new SharedArrayBuffer(4) } })).not.toThrow()
  })

  it('picks reusePort where the OS balances one port over threads (Linux), pool elsewhere; pool mode runs one worker with -w pool threads', () => {
    expect(resolveMode(undefined, 'linux').mode).toBe('reusePort')
    expect(resolveMode('auto', 'linux').reason).toContain('SO_REUSEPORT')
    expect(resolveMode('auto', 'darwin').mode).toBe('pool')
    expect(resolveMode('auto', 'win32').mode).toBe('pool')
    expect(resolveMode('pool', 'linux').mode).toBe('pool')
    expect(() => resolveMode('reusePort', 'darwin')).toThrow(expect.objectContaining({ code: 'SPINDLE_RUNTIME_REUSEPORT_UNSUPPORTED' }))
    expect(resolveOptions({ app, workers: 3 })).toMatchObject({ mode: process.platform === 'linux' ? 'reusePort' : 'pool' })
    expect(resolveOptions({ app, workers: 3, mode: 'reusePort' })).toMatchObject({ mode: 'reusePort', workers: 3, poolThreads: 0 })
    expect(resolveOptions({ app, workers: 3, mode: 'pool' })).toMatchObject({ mode: 'pool', workers: 1, poolThreads: 3, minReadyWorkers: 1 })
  })

  it('warms a replacement with 20 rounds of requests, in pool mode until each pool thread rendered 100 times unless requests is given', () => {
    expect(resolveOptions({ app, mode: 'reusePort' }).warmup).toMatchObject({ paths: ['/'], requests: 20, perThread: 0, timeout: 5000 })
    expect(resolveOptions({ app, mode: 'pool' }).warmup).toMatchObject({ paths: ['/'], requests: 20, perThread: 100, timeout: 5000 })
    expect(resolveOptions({ app, mode: 'pool', warmup: { requests: 7 } }).warmup).toMatchObject({ requests: 7, perThread: 0 })
    expect(resolveOptions({ app, mode: 'pool', warmup: false }).warmup).toBe(false)
  })

  it('keeps request metrics by default only where the control port can serve them', () => {
    expect(resolveOptions({ app }).metrics).toBe(true)
    expect(resolveOptions({ app, controlPort: false }).metrics).toBe(false)
    expect(resolveOptions({ app, controlPort: false, metrics: true }).metrics).toBe(true)
    expect(resolveOptions({ app, metrics: false }).metrics).toBe(false)
  })

  it('caps the default young generation at 96 MB and never raises V8\'s own', () => {
    const young = (v8?: number, input: Partial<ServeOptions> = {}): number =>
      resolveOptions({ app, ...input } as ServeOptions, v8).youngGenerationMb
    expect(young(192)).toBe(96)
    expect(young(24)).toBe(24)
    expect(young(undefined)).toBe(96)
    expect(young(24, { youngGenerationMb: 48 })).toBe(48)
    expect(young(192, { youngGenerationMb: 0 })).toBe(0)
  })

  it('leaves V8\'s parallel scavenge on unless parallelScavenge is false', () => {
    expect(resolveOptions({ app }).parallelScavenge).toBe(true)
    expect(resolveOptions({ app, parallelScavenge: false }).parallelScavenge).toBe(false)
  })

  it('defaults workers to the CPUs this process may use', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cgroup-'))
    expect(defaultWorkerCount(dir)).toBeGreaterThanOrEqual(1)
    writeFileSync(join(dir, 'cpu.max'), '100000 100000\n')
    expect(defaultWorkerCount(dir)).toBe(1)
    writeFileSync(join(dir, 'cpu.max'), '150000 100000\n')
    expect(defaultWorkerCount(dir)).toBe(Math.min(2, defaultWorkerCount(join(dir, 'none'))))
    writeFileSync(join(dir, 'cpu.max'), 'max 100000\n')
    expect(defaultWorkerCount(dir)).toBe(defaultWorkerCount(join(dir, 'none')))
    mkdirSync(join(dir, 'none'), { recursive: true })
  })
})
