import { describe, expect, it } from 'vitest'
import { CircuitBreaker, type BreakerState } from '../src/fleet/circuit-breaker.ts'

function setup () {
  let t = 1_000
  const changes: Array<[BreakerState, BreakerState]> = []
  const breaker = new CircuitBreaker({ failureThreshold: 3, openMs: 500, now: () => t, onChange: (to, from) => changes.push([from, to]) })
  return { breaker, changes, advance: (ms: number) => { t += ms } }
}

describe('circuit breaker', () => {
  it('stays closed below the threshold and forgets failures after a success', () => {
    const { breaker, changes } = setup()
    breaker.failure(); breaker.failure(); breaker.success(); breaker.failure(); breaker.failure()
    expect(breaker.state).toBe('closed')
    expect(breaker.allow()).toBe(true)
    expect(changes).toEqual([])
  })

  it('opens after consecutive failures, refuses calls for openMs, then lets one probe through', () => {
    const { breaker, changes, advance } = setup()
    for (let i = 0; i < 3; i++) breaker.failure()
    expect(breaker.state).toBe('open')
    expect(breaker.allow()).toBe(false)
    advance(499)
    expect(breaker.allow()).toBe(false)
    advance(1)
    expect(breaker.allow()).toBe(true)
    expect(breaker.state).toBe('half-open')
    // Only the probe: a second caller is refused while it is out.
    expect(breaker.allow()).toBe(false)
    breaker.success()
    expect(breaker.state).toBe('closed')
    expect(breaker.allow()).toBe(true)
    expect(changes).toEqual([['closed', 'open'], ['open', 'half-open'], ['half-open', 'closed']])
  })

  it('a failed probe opens it again for another openMs', () => {
    const { breaker, changes, advance } = setup()
    for (let i = 0; i < 3; i++) breaker.failure()
    advance(500)
    expect(breaker.allow()).toBe(true)
    breaker.failure()
    expect(breaker.state).toBe('open')
    advance(400)
    expect(breaker.allow()).toBe(false)
    advance(100)
    expect(breaker.allow()).toBe(true)
    expect(changes.map(([, to]) => to)).toEqual(['open', 'half-open', 'open', 'half-open'])
  })

  it('trip opens at once and reports the change only once', () => {
    const { breaker, changes } = setup()
    breaker.trip(); breaker.trip()
    expect(breaker.state).toBe('open')
    expect(changes).toEqual([['closed', 'open']])
  })
})
