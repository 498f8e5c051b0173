// The step rule of the admission controller (controller.ts): whether load jumped past what
// the thread can do, told from a clump by persistence. Arrivals and ends are counted in
// buckets of BUCKET_MS; the rule reads spans of them against the thread's pace. Three ways a
// step is seen:
// - in each of STEP_RUN spans in a row, renders arrived at STEP_EACH times the pace or faster
//   (STEP_ALL times over all of them). Arrivals paced by the answers (a request on a
//   connection right after its last answer) are left out: they cannot outrun the thread,
//   however the loop batches them;
// - a steep step: STEEP_EACH times the pace in each of STEEP_RUN spans;
// - the growth rule: the queue grew in each of GROWTH_RUN spans (every arrival let in counts,
//   paced ones too, but not first requests on new connections).

/**
 * The step rule's span, in ms: at least this long, and at least three renders at the pace
 * (STEP_PACES), so that a span holds a few renders' worth of arrivals: a busy loop reads its
 * sockets between renders, so arrivals come in batches. Four spans of 50 ms outlast the
 * ramp of a client opening its connections: autocannon's 50 connections on a 2-core
 * machine it shares send their first requests over about 150 ms, which four spans of 25 ms
 * took for a step (23-32 of 1,610 pages shed in the rolling-restart benchmark). Not longer,
 * because the renders served before a step is seen wait the longer.
 */
const STEP_SPAN = 50
const STEP_PACES = 3
/** Spans in a row the step rule needs: a clump can straddle two, a starved client's three. */
const STEP_RUN = 4
/**
 * How much faster than the pace renders must arrive in each of those spans (STEP_EACH) and
 * over all of them (STEP_ALL). A sustained 2x or more passes both; a random (Poisson) load
 * at 0.8x now and then passes them on slow renders, whose spans hold few arrivals (the
 * fake-clock scenarios).
 */
const STEP_EACH = 1.5
const STEP_ALL = 2
/**
 * A steep step is seen one span sooner: renders arrived at STEEP_EACH times the pace or
 * faster in each of the last STEEP_RUN spans. An open load at 3x does that within about
 * 150 ms (its spans ran at 3-6 times the pace at the onset on the Next.js example; renders
 * arrive in batches as the loop reads its sockets), so the renders served and shed in its
 * onset wait a span less. A client's clump does not: in the rolling-restart benchmark,
 * autocannon's 50 connections opening at once were 2.4 times the pace at most in one span
 * and 2.0 at most in three in a row (29 samples over three rounds), and Poisson arrivals at
 * 0.8x almost never are: on 13 ms renders a span fits about 4 and gets 3 on average, and
 * three in a row of 10 or more come about once in 400 million spans.
 */
const STEEP_RUN = 3
const STEEP_EACH = 2.5
/**
 * The growth rule, the third way a step is seen: in each of the last GROWTH_RUN spans the
 * queue grew (all arrivals less the renders that ended) by at least GROWTH_EACH times what
 * the thread does at its pace in a span, and by GROWTH_ALL times over all of them. Here every
 * arrival let in counts, paced ones too (a 503 does not join the queue): a client that waits
 * for its answers adds an arrival only as a render ends, so closed-loop clients cannot make
 * the queue grow, however many there are, nor can clients that retry their 503s at once.
 * First requests on new connections do not count: each connection brings one, so what they
 * add is bounded by the clients' number, not their rate (the step rule counts them). Counted,
 * they made a rate-limited client starting from idle (autocannon -R at half of capacity, its
 * connections opening while it sends the first second's requests) look like a step: in the
 * fake-clock scenario of it, and in the rolling-restart benchmark on a slower day (0-25
 * Next.js pages shed a round in six rounds, against 0-2 in seven without them). The price:
 * an open load that grows by opening connections is seen by its growth only once it reuses
 * them (docs/overload.md#admission).
 * An open load at 3x grows it by about twice the pace in every span from its first, while
 * the step rule above, which leaves out arrivals within PACED_WINDOW_MS of their
 * connection's last answer, counted barely 2x at such an onset when the load generator
 * reused connections as their answers came (steps seen 135-276 ms after they began). A clump
 * grows it in one span and then drains; the steepest one measured (2.0 times the pace in
 * three spans in a row) grows it by about 1x the pace in each.
 */
const GROWTH_RUN = 3
const GROWTH_EACH = 0.5
const GROWTH_ALL = 1.5
/**
 * The step rule counts arrivals in buckets of this many ms, kept for STEP_BUCKETS of them:
 * 640 ms, so renders slower than about 50 ms (whose four spans would not fit) are left to
 * the climb rule.
 */
const BUCKET_MS = 5
const STEP_BUCKETS = 128

export class StepRule {
  // Per bucket, each tagged with its number: arrivals (paced ones left out), arrivals let in
  // (paced ones too, first requests on a connection left out), and renders ended.
  readonly #arrived = new Uint32Array(STEP_BUCKETS)
  readonly #joined = new Uint32Array(STEP_BUCKETS)
  readonly #ended = new Uint32Array(STEP_BUCKETS)
  readonly #ids = new Float64Array(STEP_BUCKETS).fill(-1)

  /** A render arrived; `paced`: right after its connection's last answer (left out of the step counts). */
  arrived (now: number, paced: boolean): void {
    const i = this.#bucket(now)
    if (!paced) this.#arrived[i]!++
  }

  /** A render that arrived now was let in (started or queued), and counts toward the queue's growth. */
  joined (now: number): void {
    this.#joined[this.#bucket(now)]!++
  }

  /** A render ended. */
  ended (now: number): void {
    this.#ended[this.#bucket(now)]!++
  }

  /** Whether a step shows at `now` against `pace` (busy ms per render; 0: not measured, never). */
  holds (now: number, pace: number): boolean {
    if (pace === 0) return false
    const perSpan = Math.ceil(Math.max(STEP_SPAN, STEP_PACES * pace) / BUCKET_MS)
    if (perSpan * STEP_RUN > STEP_BUCKETS) return false
    const fits = perSpan * BUCKET_MS / pace
    const newest = Math.floor(now / BUCKET_MS)
    if (this.#grows(newest, perSpan, fits)) return true
    let total = 0
    // Spans in a row, from the newest, at STEEP_EACH times the pace or faster.
    let steep = 0
    for (let span = 0; span < STEP_RUN; span++) {
      const count = this.#inSpan(this.#arrived, newest, perSpan, span)
      if (count < STEP_EACH * fits) return false
      if (steep === span && count >= STEEP_EACH * fits) steep++
      if (steep === STEEP_RUN) return true
      total += count
    }
    return total >= STEP_ALL * STEP_RUN * fits
  }

  /** The growth rule (GROWTH_RUN): spans of `perSpan` buckets back from bucket `newest`, `fits` renders at the pace in each. */
  #grows (newest: number, perSpan: number, fits: number): boolean {
    let total = 0
    for (let span = 0; span < GROWTH_RUN; span++) {
      const growth = this.#inSpan(this.#joined, newest, perSpan, span) - this.#inSpan(this.#ended, newest, perSpan, span)
      if (growth < GROWTH_EACH * fits) return false
      total += growth
    }
    return total >= GROWTH_ALL * GROWTH_RUN * fits
  }

  /** The sum of `counts` over span `span` (0: the newest) of `perSpan` buckets back from bucket `newest`. */
  #inSpan (counts: Uint32Array, newest: number, perSpan: number, span: number): number {
    let sum = 0
    for (let b = 0; b < perSpan; b++) {
      const bucket = newest - span * perSpan - b
      const i = bucket % STEP_BUCKETS
      if (this.#ids[i] === bucket) sum += counts[i]!
    }
    return sum
  }

  /** The bucket for `now`, cleared when it starts a new span of time. */
  #bucket (now: number): number {
    const id = Math.floor(now / BUCKET_MS)
    const i = id % STEP_BUCKETS
    if (this.#ids[i] !== id) { this.#ids[i] = id; this.#arrived[i] = 0; this.#joined[i] = 0; this.#ended[i] = 0 }
    return i
  }
}
