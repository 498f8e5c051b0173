// Open-loop load at a constant arrival rate, like k6's constant-arrival-rate: request i
// starts at t0 + i / rate whatever happened to the ones before, so a slow server faces
// the same offered load as a fast one. Each request times out after `timeout` ms; past
// `maxInflight` requests in flight, a due request is counted as dropped instead of sent.
// Requests go round-robin over `connections` keep-alive connections, skipping busy ones, as
// k6 hands iterations to its pool of VUs: at light load traffic still spreads over many
// connections (a pool that always reuses its first idle connection would pin light load to
// the one or two server threads those few connections happened to land on). When every
// connection is busy, a due request opens one more (as k6 starts another VU, up to its
// maxVUs) rather than waiting in a connection's queue: a request that waits on the client
// is not sent at its time, and the load stops being open. Worse, each such request then
// goes out the instant the answer before it arrives, which is what a client retrying at
// once does, and the server may take it for one.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { getRequestBytes, openSocket, RawConnection } from './raw-http.mjs'
import { percentile } from './stats.mjs'

/**
 * Keep-alive connections opened before the clock starts, a batch at a time, as a load
 * generator in steady state would hold them: the measured run then times requests, not
 * TCP handshakes, and does not overflow the server's accept queue.
 */
async function preconnect (host, port, count, timeout) {
  const sockets = []
  for (let i = 0; i < count; i += 32) {
    sockets.push(...await Promise.all(Array.from({ length: Math.min(32, count - i) }, () => openSocket(host, port, timeout))))
  }
  return sockets
}

const TIMEOUT = new Error('timeout')

/**
 * `connections` are opened before the clock starts; more are opened while all are busy, and
 * the result's `connections` says how many were used in all. `record`, if given, is called
 * once per request that was sent, when it ends, with `at` (ms from the start of the run to
 * its scheduled send), `ms` (its latency; about the timeout for one that timed out),
 * `status` (0 when it failed without an answer) and `shed` (its X-Spindle-Shed header, or '').
 */
export async function openLoop ({ url, rate, duration, timeout = 5000, maxInflight = 2000, connections = 128, headers = {}, record }) {
  const target = new URL(url)
  const host = target.hostname
  const port = Number(target.port || 80)
  const bytes = getRequestBytes(target.host, target.pathname + target.search, headers)
  const sockets = await preconnect(host, port, connections, timeout)
  // Each connection starts on its pre-opened socket and opens a new one if the server closes it.
  const clients = sockets.map((socket) => new RawConnection(host, port, bytes, { socket, timeout }))
  // When each connection's request in flight was sent; 0 while the connection is idle.
  const startedAt = clients.map(() => 0)
  let cursor = 0
  /** The next idle connection after the last one used; a new one if none is idle. */
  const pick = () => {
    const n = clients.length
    for (let k = 0; k < n; k++) {
      const i = (cursor + k) % n
      if (startedAt[i] === 0) { cursor = (i + 1) % n; return i }
    }
    clients.push(new RawConnection(host, port, bytes, { timeout }))
    startedAt.push(0)
    return clients.length - 1
  }
  const total = Math.round(rate * duration)
  const lat2xx = []
  const lat503 = []
  const tally = { sent: 0, ok: 0, status503: 0, otherStatus: 0, timeouts: 0, errors: 0, dropped: 0 }
  let inflight = 0
  const pending = new Set()

  const fire = () => {
    tally.sent++
    inflight++
    const started = performance.now()
    const c = pick()
    startedAt[c] = started
    const p = clients[c].send()
      .then(({ status, shed }) => {
        const ms = performance.now() - started
        if (status >= 200 && status < 300) { tally.ok++; lat2xx.push(ms) } else if (status === 503) { tally.status503++; lat503.push(ms) } else tally.otherStatus++
        record?.({ at: started - t0, ms, status, shed })
      })
      .catch((err) => {
        if (err === TIMEOUT) tally.timeouts++
        else tally.errors++
        record?.({ at: started - t0, ms: performance.now() - started, status: 0, shed: '' })
      })
      .finally(() => { inflight--; startedAt[c] = 0; pending.delete(p) })
    pending.add(p)
  }
  // A request unanswered after `timeout` ms is abandoned with its connection, found by a
  // sweep every 50 ms rather than a timer per request.
  const sweep = setInterval(() => {
    const late = performance.now() - timeout
    for (let i = 0; i < clients.length; i++) if (startedAt[i] !== 0 && startedAt[i] <= late) clients[i].abort(TIMEOUT)
  }, 50)

  // The generator shares the machine with the server: its own event-loop delay is reported
  // so a late measurement can be told apart from a late server.
  const lag = monitorEventLoopDelay({ resolution: 5 })
  lag.enable()
  const t0 = performance.now()
  let next = 0
  await new Promise((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1)
      while (next < due) {
        next++
        if (inflight >= maxInflight) tally.dropped++
        else fire()
      }
      if (next >= total) resolve()
      else setTimeout(tick, 1)
    }
    tick()
  })
  await Promise.allSettled([...pending])
  clearInterval(sweep)
  lag.disable()
  for (const client of clients) client.abort(new Error('closed'))
  const elapsed = Math.max(duration, (performance.now() - t0) / 1000)
  lat2xx.sort((a, b) => a - b)
  lat503.sort((a, b) => a - b)
  const pct = (xs) => ({ p50: percentile(xs, 50), p95: percentile(xs, 95), p99: percentile(xs, 99) })
  return {
    ...tally,
    connections: clients.length,
    rate,
    duration,
    goodput: tally.ok / elapsed,
    successPct: total ? (100 * tally.ok) / total : 0,
    latency2xx: pct(lat2xx),
    latency503: pct(lat503),
    generatorLagP99: lag.percentile(99) / 1e6,
  }
}
