// Closed-loop load (capacity): autocannon with a fixed number of connections, each sending
// its next request when the previous answer arrives.
import autocannon from 'autocannon'
import { percentile } from './stats.mjs'

export async function closedLoop ({ url, connections = 100, duration = 10, headers = {}, paths }) {
  const latencies = []
  const requests = paths?.map((path) => ({ method: 'GET', path }))
  const instance = autocannon({ url, connections, duration, headers, timeout: 10, ...(requests ? { requests } : {}) })
  instance.on('response', (_client, status, _bytes, ms) => { latencies.push(ms) })
  const r = await instance
  const total = r.requests.total + r.errors + r.timeouts
  const ok = r['2xx']
  latencies.sort((a, b) => a - b)
  return {
    rps: ok / duration,
    total,
    ok,
    successPct: total ? (100 * ok) / total : 0,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    errors: r.errors + r.non2xx,
    timeouts: r.timeouts,
  }
}
