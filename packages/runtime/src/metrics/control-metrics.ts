// The control port's /metrics: the process's own metrics (prom-client's defaults), what the
// supervisor reads from outside the workers' event loops, and every worker's request
// metrics, per worker and summed. Runs on the main thread, which never runs app code.
import { ADMISSION_STATES } from '../admission/controller.ts'
import { collectDefaultMetrics, Registry } from 'prom-client'
import { METRICS_STALE_MS, type MetricSnapshot, POOL_THREAD_LOSSES, type ScalarFigures, SHED_REASONS } from '../protocol.ts'
import { exposition } from './exposition.ts'
import { addSnapshots, perWorker, sumsInMicros, sumsInSeconds } from './figures.ts'
import type { Supervisor, WorkerState } from '../supervisor.ts'

/**
 * How long a scrape waits for a worker's answer. A worker in the middle of a long
 * synchronous render answers late; its previous answer is used instead, so a scrape stays
 * fast and counters never go backwards.
 */
export const WORKER_METRICS_TIMEOUT_MS = 50

const STATES: readonly WorkerState[] = ['starting', 'ready', 'overloaded', 'unresponsive', 'replacing', 'restarting', 'stopped']

function snapshot (name: string, type: 'gauge' | 'counter', help: string, values: ScalarFigures[]): MetricSnapshot {
  return { name, type, help, values }
}

export class ControlMetrics {
  readonly #supervisor: Supervisor
  readonly #process = new Registry()
  readonly #extra: (() => string) | undefined
  /** The last answer of each live worker, keyed 'slot/generation'. */
  readonly #last = new Map<string, { id: number, metrics: MetricSnapshot[] }>()
  /**
   * Per slot, the counters and histograms of its workers that have exited, summed: added to
   * the live workers' figures, so a restart or a rolling restart never sets a counter back.
   * A worker that drained sends its final figures; of one that crashed or was ended, those
   * it sent last (up to METRICS_PUSH_MS old) or, failing those, the last scrape's.
   */
  readonly #retired = new Map<number, MetricSnapshot[]>()
  /** Workers ('slot/generation') whose figures are already in #retired: a scrape that asked them before they exited must not add them again. */
  readonly #gone = new Set<string>()

  constructor (supervisor: Supervisor, extra?: () => string) {
    this.#supervisor = supervisor
    this.#extra = extra
    collectDefaultMetrics({ register: this.#process })
    // A worker that exits leaves its last figures (final ones, counted after its last
    // response, when it drained): they replace what a scrape last had of it.
    supervisor.on('worker-metrics-final', ({ id, generation, metrics }: { id: number, generation: number, metrics: MetricSnapshot[] }) => {
      const key = `${id}/${generation}`
      if (this.#gone.has(key)) return
      this.#last.delete(key)
      this.#gone.add(key)
      this.#retire(id, metrics)
    })
  }

  /**
   * The whole exposition text; resolves within WORKER_METRICS_TIMEOUT_MS plus the local work:
   * prom-client's text for the process's own metrics, then the supervisor's and the workers'
   * figures (exposition.ts says why those are not prom-client's).
   */
  async text (): Promise<string> {
    const supervisor = this.#supervisor
    const answers = await supervisor.workerMetrics(WORKER_METRICS_TIMEOUT_MS)
    const workers = supervisor.status()
    const unanswered = answers.filter((a) => a.current && a.metrics === undefined).length
    const live = new Set<string>()
    for (const a of answers) {
      const key = `${a.id}/${a.generation}`
      if (this.#gone.has(key)) continue
      live.add(key)
      // A worker that did not answer shows the newest figures it sent (they only grow).
      const figures = a.metrics ?? a.latest
      if (figures) this.#last.set(key, { id: a.id, metrics: figures })
    }
    for (const [key, { id, metrics }] of this.#last) {
      if (live.has(key)) continue
      this.#last.delete(key)
      this.#gone.add(key)
      this.#retire(id, metrics)
    }
    const per = (pick: (w: typeof workers[number]) => number): ScalarFigures[] => workers.map((w) => ({ value: pick(w), labels: { worker: w.id } }))
    const sum = (pick: (w: typeof workers[number]) => number): ScalarFigures[] => [{ value: workers.reduce((n, w) => n + pick(w), 0), labels: {} }]

    const supervisorFigures: MetricSnapshot[] = [
      snapshot('spindle_ready', 'gauge', '1 when the server is ready for traffic', [{ value: supervisor.isReady() ? 1 : 0, labels: {} }]),
      snapshot('spindle_workers_ready', 'gauge', 'Workers ready for traffic', [{ value: supervisor.readyWorkers(), labels: {} }]),
      snapshot('spindle_workers', 'gauge', 'Worker slots, by state', STATES.map((state) => ({ value: workers.filter((w) => w.state === state).length, labels: { state } }))),
      snapshot('spindle_worker_state', 'gauge', '1 for the state each worker is in', workers.flatMap((w) => STATES.map((state) => ({ value: w.state === state ? 1 : 0, labels: { worker: w.id, state } })))),
      snapshot('spindle_worker_event_loop_utilization', 'gauge', 'Event-loop utilization over the last check', per((w) => w.elu)),
      snapshot('spindle_worker_heap_used_bytes', 'gauge', 'V8 heap in use', per((w) => w.heapUsed ?? 0)),
      snapshot('spindle_worker_requests_in_flight', 'gauge', 'Requests whose response has not closed', per((w) => w.inflight)),
      snapshot('spindle_requests_in_flight', 'gauge', 'Requests whose response has not closed, all workers', sum((w) => w.inflight)),
      snapshot('spindle_worker_restarts_total', 'counter', 'Times the worker slot was restarted or replaced', per((w) => w.restarts)),
      snapshot('spindle_restarts_total', 'counter', 'Times any worker slot was restarted or replaced', sum((w) => w.restarts)),
      snapshot('spindle_worker_admission_state', 'gauge', '1 for the admission state each worker is in (docs/overload.md#admission)', workers.flatMap((w) => ADMISSION_STATES.map((state) => ({ value: w.admission === state ? 1 : 0, labels: { worker: w.id, state } })))),
      snapshot('spindle_worker_shed_requests_total', 'counter', 'Requests answered 503 by load shedding, by reason', workers.flatMap((w) => SHED_REASONS.map((reason) => ({ value: w.shed[reason], labels: { worker: w.id, reason } })))),
      snapshot('spindle_shed_requests_total', 'counter', 'Requests answered 503 by load shedding, all workers, by reason', SHED_REASONS.map((reason) => ({ value: workers.reduce((n, w) => n + w.shed[reason], 0), labels: { reason } }))),
      snapshot('spindle_worker_pool_threads_lost_total', 'counter', 'Render pool threads that crashed or hung and were replaced, by reason', workers.flatMap((w) => POOL_THREAD_LOSSES.map((reason) => ({ value: w.poolThreadsLost[reason], labels: { worker: w.id, reason } })))),
      snapshot('spindle_pool_threads_lost_total', 'counter', 'Render pool threads that crashed or hung and were replaced, all workers, by reason', POOL_THREAD_LOSSES.map((reason) => ({ value: workers.reduce((n, w) => n + w.poolThreadsLost[reason], 0), labels: { reason } }))),
      snapshot('spindle_metrics_workers_unanswered', 'gauge', `Workers whose request metrics did not arrive for this scrape: asked and silent for ${WORKER_METRICS_TIMEOUT_MS} ms, or busy and silent for ${METRICS_STALE_MS / 1000} s (their previous figures are shown)`,
        [{ value: unanswered, labels: {} }]),
    ]
    // Summed here under the metric's own name, and per worker under spindle_worker_…, with
    // histogram sums in integer microseconds: a float total depends on the order of its
    // terms, and a worker's figures move from the live ones into its slot's retired total
    // when it exits, so a float _sum could read a hair lower after a restart (Prometheus
    // takes any drop for a counter reset).
    const figures = [
      ...[...this.#last.values()].map(({ id, metrics }) => ({ id, metrics: sumsInMicros(metrics) })),
      ...[...this.#retired].map(([id, metrics]) => ({ id, metrics })),
    ]
    const own = exposition([
      ...supervisorFigures,
      ...sumsInSeconds(addSnapshots(figures.map((f) => f.metrics))),
      ...sumsInSeconds(addSnapshots(figures.map((f) => f.metrics.map((m) => perWorker(m, f.id))))),
    ])
    const text = `${await this.#process.metrics()}\n${own}`
    return text + (this.#extra?.() ?? '')
  }

  /**
   * Folds the final figures of a worker that exited into its slot's: counters and
   * histograms only (a gauge of a gone worker means nothing). Summed at once, with no await
   * between reading and writing the total: two scrapes at once must not both fold the same
   * worker in, or lose one.
   */
  #retire (id: number, metrics: MetricSnapshot[]): void {
    const lasting = sumsInMicros(metrics.filter((m) => m.type === 'counter' || m.type === 'histogram'))
    this.#retired.set(id, addSnapshots([this.#retired.get(id) ?? [], lasting]))
  }
}
