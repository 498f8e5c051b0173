import type { BreakerState } from './circuit-breaker.ts'

const STATES: BreakerState[] = ['closed', 'open', 'half-open']

/** What the fleet agent counts, and its Prometheus text. */
export class FleetCounters {
  loadHits = 0
  loadMisses = 0
  /** Entries read from Redis and not used: damaged, too large once inflated, or metadata the cache cannot serve. */
  refused = 0
  saves = 0
  waits = 0
  oversize = 0
  dropped = 0
  skipped = 0
  failures = 0
  errors = 0
  invalidationsSent = 0
  invalidationsReceived = 0
  deletesReceived = 0
  connects = 0
  disconnects = 0
  breakerChanges = 0

  render (state: { up: boolean, breaker: BreakerState, pending: number }): string {
    const lines: string[] = []
    const metric = (name: string, type: 'counter' | 'gauge', help: string, samples: Array<[string, number]>): void => {
      lines.push(`# HELP spindle_cache_fleet_${name} ${help}`, `# TYPE spindle_cache_fleet_${name} ${type}`)
      for (const [labels, value] of samples) lines.push(`spindle_cache_fleet_${name}${labels} ${value}`)
    }
    metric('up', 'gauge', '1 when Redis is reachable, tags are in sync and the breaker is not open', [['', state.up ? 1 : 0]])
    metric('breaker_state', 'gauge', 'Circuit breaker state (1 for the current one)', STATES.map((s) => [`{state="${s}"}`, s === state.breaker ? 1 : 0]))
    metric('loads_total', 'counter', 'Memory misses looked up in Redis, by result', [['{result="hit"}', this.loadHits], ['{result="miss"}', this.loadMisses], ['{result="refused"}', this.refused]])
    metric('waits_total', 'counter', 'Memory misses that waited for an entry another process was producing', [['', this.waits]])
    metric('saves_total', 'counter', 'Entries written to Redis', [['', this.saves]])
    metric('oversize_total', 'counter', 'Entries kept out of Redis for their size', [['', this.oversize]])
    metric('dropped_total', 'counter', 'Entries not written to Redis because too many were waiting', [['', this.dropped]])
    metric('skipped_total', 'counter', 'Redis calls skipped while disconnected or the breaker was open', [['', this.skipped]])
    metric('failures_total', 'counter', 'Redis calls that failed or timed out', [['', this.failures]])
    metric('connection_errors_total', 'counter', 'Connection errors reported by the client', [['', this.errors]])
    metric('invalidations_total', 'counter', 'Tag invalidations sent to and received from the fleet', [['{direction="sent"}', this.invalidationsSent], ['{direction="received"}', this.invalidationsReceived]])
    metric('deletes_received_total', 'counter', 'Keys deleted in memory because another process deleted them (a purge by key, a POST)', [['', this.deletesReceived]])
    metric('invalidations_pending', 'gauge', 'Tag invalidations waiting for Redis to come back', [['', state.pending]])
    metric('connects_total', 'counter', 'Times the connection came up and tags were synchronised', [['', this.connects]])
    metric('disconnects_total', 'counter', 'Times the connection was lost', [['', this.disconnects]])
    metric('breaker_changes_total', 'counter', 'Circuit breaker state changes', [['', this.breakerChanges]])
    return lines.join('\n') + '\n'
  }
}
