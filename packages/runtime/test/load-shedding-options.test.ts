import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { loadShedding, serve } from '@spindle/runtime'
import { resolveSheddingOptions } from '../src/shed-options.ts'
import { fixture } from './helpers.ts'

const base = { app: fixture('shed-app.js'), port: 0, controlPort: false, handleSignals: false, workers: 1 } as const

describe('load-shedding options', () => {
  it.each([
    [{ maxEventLoopDelay: -1 }, 'shedding.maxEventLoopDelay must be a number of milliseconds from 0 to 2147483647, got -1'],
    [{ maxEventLoopUtilization: 1.5 }, 'shedding.maxEventLoopUtilization must be a number from 0 to 1, got 1.5'],
    [{ sampleInterval: 5 }, 'shedding.sampleInterval must be a number of milliseconds from 10 to 2147483647, got 5'],
    [{ retryAfter: 1.5 }, 'shedding.retryAfter must be a whole number of seconds, got 1.5'],
    [{ staticPrefixes: ['assets/'] }, "shedding.staticPrefixes.0 must be a path starting with '/', got \"assets/\""],
    [{ maxHeapRatio: 2 }, 'shedding.maxHeapRatio must be a number from 0 to 1, got 2'],
    [{ overloadBacklog: 1000 }, 'shedding.overloadBacklog (1000) must be below maxBacklog (1000), or 0'],
    [{ overloadBacklog: -5 }, 'shedding.overloadBacklog must be a number of milliseconds from 0 to 2147483647, got -5'],
    [{ typo: 1 }, 'unknown option "shedding.typo"'],
  ])('serve() rejects %j before starting any worker', async (shedding, message) => {
    await expect(serve({ ...base, shedding: shedding as never })).rejects.toMatchObject({ code: 'SPINDLE_RUNTIME_INVALID_OPTION', message })
  })

  it('queues up to a second of work, and holds the queue to 10 ms under overload by default, unless maxBacklog is that short already', () => {
    expect(resolveSheddingOptions({})).toMatchObject({ maxBacklog: 1000, overloadBacklog: 10 })
    expect(resolveSheddingOptions({ maxBacklog: 11 }).overloadBacklog).toBe(10)
    expect(resolveSheddingOptions({ maxBacklog: 10 }).overloadBacklog).toBe(0)
    expect(resolveSheddingOptions({ maxBacklog: 20, overloadBacklog: 5 }).overloadBacklog).toBe(5)
    expect(resolveSheddingOptions({ overloadBacklog: 0 }).overloadBacklog).toBe(0)
    expect(() => resolveSheddingOptions({ maxBacklog: 20, overloadBacklog: 30 }, 'shedding.')).toThrow('shedding.overloadBacklog (30) must be below maxBacklog (20), or 0')
  })

  it('rejects a shedding value that is neither an object nor false', async () => {
    await expect(serve({ ...base, shedding: true as never })).rejects.toMatchObject({ code: 'SPINDLE_RUNTIME_INVALID_OPTION', message: 'shedding must be an object or false, got true' })
  })

  it('the plugin validates its options at registration', async () => {
    const app = Fastify()
    await expect(app.register(loadShedding, { maxQueueTime: 'soon' as never }).ready()).rejects.toMatchObject({
      code: 'SPINDLE_RUNTIME_INVALID_OPTION', message: 'maxQueueTime must be a number of milliseconds from 0 to 2147483647, got "soon"',
    })
    await app.close()
  })
})
