// Open-loop load at a constant arrival rate: request i starts at t0 + i/rate whatever
// happened to earlier ones (k6's constant-arrival-rate), so a slow server cannot slow the
// client down and hide its queue. Requests past maxInflight are counted as dropped.
import { Agent, request } from 'undici'

function percentile (sorted, p) {
  if (sorted.length === 0) return null
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 10) / 10
}

function summary (latencies) {
  const sorted = Float64Array.from(latencies).sort()
  return { count: sorted.length, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99) }
}

/**
 * @param {{ url: string, rate: number, duration: number, timeout?: number, maxInflight?: number, headers?: Record<string, string> }} opts
 *   rate in requests/s, duration and timeout in ms (default 5000), maxInflight default 2000.
 */
export async function openLoop ({ url, rate, duration, timeout = 5000, maxInflight = 2000, headers = {} }) {
  const target = new URL(url)
  if (target.hostname !== '127.0.0.1') throw new Error('openLoop only sends traffic to 127.0.0.1')
  const dispatcher = new Agent({ connections: maxInflight, pipelining: 1, keepAliveTimeout: 10_000 })
  const ok = []
  const shed = []
  let other = 0
  let timeouts = 0
  let errors = 0
  let dropped = 0
  let inflight = 0
  const total = Math.floor(rate * duration / 1000)
  const t0 = performance.now()
  const pending = new Set()

  const one = async () => {
    const started = performance.now()
    inflight++
    try {
      const res = await request(target, { dispatcher, headers, headersTimeout: timeout, bodyTimeout: timeout, signal: AbortSignal.timeout(timeout) })
      await res.body.dump()
      const ms = performance.now() - started
      if (res.statusCode >= 200 && res.statusCode < 300) ok.push(ms)
      else if (res.statusCode === 503) shed.push(ms)
      else other++
    } catch (err) {
      if (err.name === 'TimeoutError' || err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') timeouts++
      else errors++
    } finally {
      inflight--
    }
  }

  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
    if (inflight >= maxInflight) { dropped++; continue }
    const p = one()
    pending.add(p)
    p.finally(() => pending.delete(p))
  }
  await Promise.all(pending)
  await dispatcher.close()
  const seconds = duration / 1000
  return {
    rate, sent: total - dropped, dropped, timeouts, errors, other,
    goodput: Math.round(ok.length / seconds),
    successPct: Math.round((ok.length / total) * 1000) / 10,
    ok: summary(ok),
    shed: summary(shed),
  }
}
