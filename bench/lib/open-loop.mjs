// Open-loop load at a constant arrival rate, like k6's constant-arrival-rate: request i
// starts at t0 + i / rate whatever happened to the ones before, so a slow server faces
// the same offered load as a fast one. Each request times out after `timeout` ms; past
// `maxInflight` requests in flight, a due request is counted as dropped instead of sent.
import { Pool } from 'undici'
import { percentile } from './stats.mjs'

export async function openLoop ({ url, rate, duration, timeout = 5000, maxInflight = 2000, connections = 512, headers = {} }) {
  const target = new URL(url)
  const pool = new Pool(target.origin, { connections, pipelining: 1, headersTimeout: timeout, bodyTimeout: timeout, connect: { timeout } })
  const path = target.pathname + target.search
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
    const signal = AbortSignal.timeout(timeout)
    const p = pool.request({ path, method: 'GET', headers, signal })
      .then(async (res) => {
        await res.body.dump({ signal })
        const ms = performance.now() - started
        if (res.statusCode >= 200 && res.statusCode < 300) { tally.ok++; lat2xx.push(ms) } else if (res.statusCode === 503) { tally.status503++; lat503.push(ms) } else tally.otherStatus++
      })
      .catch((err) => {
        if (signal.aborted || /timeout/i.test(err?.code ?? '') || /Timeout/.test(err?.name ?? '')) tally.timeouts++
        else tally.errors++
      })
      .finally(() => { inflight--; pending.delete(p) })
    pending.add(p)
  }

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
  await pool.close()
  const elapsed = Math.max(duration, (performance.now() - t0) / 1000)
  lat2xx.sort((a, b) => a - b)
  lat503.sort((a, b) => a - b)
  const pct = (xs) => ({ p50: percentile(xs, 50), p95: percentile(xs, 95), p99: percentile(xs, 99) })
  return {
    ...tally,
    rate,
    duration,
    goodput: tally.ok / elapsed,
    successPct: total ? (100 * tally.ok) / total : 0,
    latency2xx: pct(lat2xx),
    latency503: pct(lat503),
  }
}
