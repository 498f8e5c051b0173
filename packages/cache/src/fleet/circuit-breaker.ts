/**
 * Whether the fleet tier may be asked at all. A tier that is down or slow must cost a
 * request nothing: after `failureThreshold` consecutive failures the breaker opens and
 * every call is skipped (answered from memory alone) for `openMs`; then one probe is let
 * through (half-open): success closes it, failure opens it again.
 *
 *   closed --(failureThreshold failures in a row)--> open
 *   open --(openMs elapsed, next allow())--> half-open   (one probe allowed)
 *   half-open --success--> closed      half-open --failure--> open
 */
export type BreakerState = 'closed' | 'open' | 'half-open'

export interface BreakerOptions {
  /** Consecutive failures that open the breaker. */
  failureThreshold: number
  /** How long it stays open before a probe, in ms. */
  openMs: number
  /** Milliseconds clock; injected so tests can move time. */
  now: () => number
  /** Called once per state change. */
  onChange?: (to: BreakerState, from: BreakerState) => void
}

export class CircuitBreaker {
  readonly #o: BreakerOptions
  #state: BreakerState = 'closed'
  #failures = 0
  #openedAt = 0
  #probing = false

  constructor (options: BreakerOptions) {
    this.#o = options
  }

  get state (): BreakerState { return this.#state }

  /** Whether a call may go to the tier now. In half-open, only one call at a time (the probe). */
  allow (): boolean {
    if (this.#state === 'closed') return true
    if (this.#state === 'open') {
      if (this.#o.now() - this.#openedAt < this.#o.openMs) return false
      this.#move('half-open')
    }
    if (this.#probing) return false
    this.#probing = true
    return true
  }

  success (): void {
    this.#failures = 0
    this.#probing = false
    if (this.#state !== 'closed') this.#move('closed')
  }

  failure (): void {
    this.#probing = false
    this.#failures++
    if (this.#state === 'half-open' || (this.#state === 'closed' && this.#failures >= this.#o.failureThreshold)) {
      this.#openedAt = this.#o.now()
      this.#move('open')
    }
  }

  /** Opens at once (the connection is known to be gone). */
  trip (): void {
    this.#probing = false
    this.#openedAt = this.#o.now()
    if (this.#state !== 'open') this.#move('open')
  }

  #move (to: BreakerState): void {
    const from = this.#state
    this.#state = to
    this.#o.onChange?.(to, from)
  }
}
