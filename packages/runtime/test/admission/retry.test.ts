// The per-connection marks both admission hosts (a worker's render queue, the render pool's
// gate) read: a connection's first render, immediate retries and paced requests.
import { describe, expect, it } from 'vitest'
import { Socket } from 'node:net'
import { firstOnConnection, isPaced, isRetry, markAnswered, markShed, PACED_WINDOW_MS, RETRY_WINDOW_MS } from '../../src/admission/retry.ts'

describe('per-connection marks', () => {
  it('a connection has one first render: what a client that moves its connections brings, once per connection', () => {
    const a = new Socket()
    const b = new Socket()
    expect(firstOnConnection(a)).toBe(true)
    expect(firstOnConnection(a)).toBe(false)
    expect(firstOnConnection(b)).toBe(true)
    expect(firstOnConnection(a)).toBe(false)
    // An injected request has no socket: never a first render.
    expect(firstOnConnection(null)).toBe(false)
  })

  it('a request right after its connection\'s 503 is a retry, right after any answer paced; later ones neither', () => {
    const s = new Socket()
    expect(isRetry(s, 0)).toBe(false)
    expect(isPaced(s, 0)).toBe(false)
    markShed(s, 1000)
    expect(isRetry(s, 1000 + RETRY_WINDOW_MS - 1)).toBe(true)
    expect(isRetry(s, 1000 + RETRY_WINDOW_MS)).toBe(false)
    expect(isPaced(s, 1000 + PACED_WINDOW_MS - 1)).toBe(true)
    markAnswered(s, 5000)
    expect(isRetry(s, 5001)).toBe(false)
    expect(isPaced(s, 5001)).toBe(true)
    expect(isPaced(s, 5000 + PACED_WINDOW_MS)).toBe(false)
  })
})
