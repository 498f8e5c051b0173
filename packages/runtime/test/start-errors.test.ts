import { describe, expect, it } from 'vitest'
import { createServer } from 'node:net'
import { once } from 'node:events'
import { serve } from '@spindle/runtime'
import { fixture } from './helpers.ts'

const base = { port: 0, controlPort: false, handleSignals: false, host: '127.0.0.1', workers: 2 } as const

async function startError (app: string): Promise<Error & { code: string, cause?: Error & { code?: string } }> {
  try {
    const server = await serve({ ...base, app })
    await server.close()
  } catch (err) {
    return err as Error & { code: string, cause?: Error & { code?: string } }
  }
  throw new Error('serve() did not fail')
}

describe('start-up failures', () => {
  it('an app that throws on import fails serve() with its error, without restarts', async () => {
    const err = await startError(fixture('throws-on-import.js'))
    expect(err.code).toBe('SPINDLE_RUNTIME_WORKER_START_FAILED')
    expect(err.message).toContain('boom at import')
    expect(err.cause?.message).toBe('boom at import')
  })

  it('an app whose plugin throws fails serve() and keeps the app\'s error code', async () => {
    const err = await startError(fixture('throws-in-plugin.js'))
    expect(err.code).toBe('SPINDLE_RUNTIME_WORKER_START_FAILED')
    expect(err.cause?.code).toBe('APP_DB_DOWN')
  })

  it('a module without a plugin default export is refused with a clear error', async () => {
    const err = await startError(fixture('not-a-plugin.js'))
    expect(err.cause?.code).toBe('SPINDLE_RUNTIME_APP_INVALID')
    expect(err.message).toContain('must export a Fastify plugin')
  })

  it('an options export that is not an object is refused as such', async () => {
    const err = await startError(fixture('options-not-object.js'))
    expect(err.cause?.code).toBe('SPINDLE_RUNTIME_APP_INVALID')
    expect(err.message).toContain('must export its Fastify server options as an object in `options` (got string)')
    expect(err.message).not.toContain('default export')
  })

  it('a missing app module is named', async () => {
    const err = await startError(fixture('nope.js'))
    expect(err.cause?.code).toBe('SPINDLE_RUNTIME_APP_NOT_FOUND')
    expect(err.message).toContain('nope.js')
  })

  it('a port held by another server is refused instead of silently shared', async () => {
    const other = createServer().listen(0, '127.0.0.1')
    await once(other, 'listening')
    const port = (other.address() as { port: number }).port
    try {
      await expect(serve({ ...base, app: fixture('app.js'), port })).rejects.toMatchObject({ code: 'SPINDLE_RUNTIME_PORT_IN_USE' })
    } finally {
      other.close()
    }
  })

  it('a control port held by another server is refused with its own code, and nothing is left running', async () => {
    const other = createServer().listen(0, '127.0.0.1')
    await once(other, 'listening')
    const controlPort = (other.address() as { port: number }).port
    try {
      await expect(serve({ ...base, app: fixture('app.js'), controlPort, controlHost: '127.0.0.1' })).rejects.toMatchObject({
        code: 'SPINDLE_RUNTIME_CONTROL_PORT_IN_USE', message: expect.stringContaining(`127.0.0.1:${controlPort} for the control port`),
      })
    } finally {
      other.close()
    }
  })
})
