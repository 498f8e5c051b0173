// Turns the measured rounds into the markdown table and the SVG chart in bench/results/.
import { median } from './stats.mjs'

export const CONFIG_TITLES = {
  single: 'single process',
  adapter: 'Fastify + adapter, 1 process',
  'adapter-pool': 'Fastify + adapter, N pool threads, 1 process',
  cluster: 'node:cluster',
  pm2: 'PM2 cluster',
  watt: 'Platformatic Watt',
  'spindle-1': 'Spindle, 1 worker',
  spindle: 'Spindle',
  'spindle-pool': 'Spindle, pool mode',
}
const PEERS = ['cluster', 'pm2', 'watt']

const fmt = (v, digits = 0) => Number.isFinite(v) ? v.toFixed(digits) : '–'
const mb = (bytes) => fmt(bytes / 2 ** 20)

/** Median and range of every figure for one workload × configuration. */
export function summarize (runs) {
  const pick = (f) => median(runs.map(f))
  const rps = runs.map((r) => r.closed.rps)
  return {
    rounds: runs.length,
    rps: pick((r) => r.closed.rps),
    rpsMin: Math.min(...rps),
    rpsMax: Math.max(...rps),
    successPct: pick((r) => r.closed.successPct),
    p50: pick((r) => r.closed.p50),
    p95: pick((r) => r.closed.p95),
    p99: pick((r) => r.closed.p99),
    errors: runs.reduce((n, r) => n + r.closed.errors, 0),
    timeouts: runs.reduce((n, r) => n + r.closed.timeouts, 0),
    cpu: pick((r) => r.cpu),
    // Older result files have no memory samples.
    rss: runs.every((r) => r.mem) ? pick((r) => r.mem.rssMedian) : undefined,
    pss: runs.every((r) => r.mem) ? pick((r) => r.mem.pssMedian) : undefined,
    open: runs[0]?.open ? {
      rate: runs[0].open.rate,
      successPct: pick((r) => r.open.successPct),
      goodput: pick((r) => r.open.goodput),
      p50: pick((r) => r.open.p50),
      p95: pick((r) => r.open.p95),
      p99: pick((r) => r.open.p99),
      timeouts: runs.reduce((n, r) => n + r.open.timeouts, 0),
      errors: runs.reduce((n, r) => n + r.open.errors, 0),
    } : undefined,
  }
}

export function markdown ({ results, meta }) {
  const out = [`# Spindle benchmark: ${meta.date}`, '', `Machine: ${meta.cpus} × ${meta.cpuModel}, Node.js ${meta.node}. ` +
    (meta.versions ? `Versions: ${Object.entries(meta.versions).map(([k, v]) => `${k} ${v}`).join(', ')}. ` : '') +
    `${meta.workers} workers/instances per multi-process configuration; ${meta.rounds} rounds, configurations alternating round by round, every other round in reverse order; ` +
    `closed loop: autocannon, ${meta.connections} connections, ${meta.duration} s; open loop: constant arrival rate at ${meta.openFactor}× the single process's capacity, ${meta.duration} s, 5 s client timeout. ` +
    'Medians over rounds (min–max of req/s). The load generator shares the machine\'s cores with the server. ' +
    'Memory: resident set of the server\'s whole process tree sampled every 0.5 s under the closed loop, median over the run; RSS sums each process (shared pages counted once per process), PSS splits shared pages among the processes that map them.', '']
  for (const block of Object.values(results)) {
    out.push(`## ${block.title}`, '')
    const base = block.configs.single?.summary?.rps
    const peerBest = Math.max(...PEERS.map((p) => block.configs[p]?.summary?.rps ?? -Infinity))
    out.push('| configuration | req/s (min–max) | × single | × best peer | success % | p50 / p95 / p99 ms | errors | timeouts | server CPU (cores) | RSS / PSS MB | × cluster RSS | open loop: success % | goodput req/s | p95 / p99 ms | timeouts |')
    out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    const clusterRss = block.configs.cluster?.summary?.rss
    for (const [config, entry] of Object.entries(block.configs)) {
      const title = CONFIG_TITLES[config] ?? config
      if (entry.unavailable) { out.push(`| ${title} | not run: ${entry.unavailable} |||||||||||||| `); continue }
      const s = entry.summary
      if (!s) { out.push(`| ${title} | failed: ${entry.error ?? 'no result'} |||||||||||||| `); continue }
      const o = s.open
      out.push(`| ${title} | ${fmt(s.rps)} (${fmt(s.rpsMin)}–${fmt(s.rpsMax)}) | ${base ? fmt(s.rps / base, 2) : '–'} | ${Number.isFinite(peerBest) && peerBest > 0 ? fmt(s.rps / peerBest, 2) : '–'} | ${fmt(s.successPct, 2)} | ${fmt(s.p50)} / ${fmt(s.p95)} / ${fmt(s.p99)} | ${s.errors} | ${s.timeouts} | ${fmt(s.cpu, 2)} | ${mb(s.rss)} / ${mb(s.pss)} | ${s.rss && clusterRss ? fmt(s.rss / clusterRss, 2) : '–'} | ` +
        (o ? `${fmt(o.successPct, 2)} | ${fmt(o.goodput)} | ${fmt(o.p95)} / ${fmt(o.p99)} | ${o.timeouts} |` : '– | – | – | – |'))
    }
    if (block.configs.single?.summary?.open) out.push('', `Open-loop rate: ${fmt(block.configs.single.summary.open.rate)} req/s.`)
    out.push('')
  }
  return out.join('\n')
}

/** Grouped horizontal bars: req/s of each configuration, one group per workload. */
export function svgChart ({ results, meta }) {
  const colors = { adapter: '#bdbdbd', 'adapter-pool': '#78909c', single: '#9e9e9e', cluster: '#8d6e63', pm2: '#5c6bc0', watt: '#26a69a', 'spindle-1': '#ffb74d', spindle: '#e65100', 'spindle-pool': '#bf360c' }
  const rowH = 18
  const labelW = 170
  const barW = 520
  let y = 40
  const parts = []
  for (const block of Object.values(results)) {
    const rows = Object.entries(block.configs).filter(([, e]) => e.summary)
    if (rows.length === 0) continue
    const max = Math.max(...rows.map(([, e]) => e.summary.rps))
    parts.push(`<text x="10" y="${y}" font-weight="bold">${escape(block.title)}</text>`)
    y += 8
    for (const [config, e] of rows) {
      const w = Math.max(1, (e.summary.rps / max) * barW)
      parts.push(`<text x="10" y="${y + 13}">${escape(CONFIG_TITLES[config] ?? config)}</text>`,
        `<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${rowH - 4}" fill="${colors[config] ?? '#607d8b'}"/>`,
        `<text x="${labelW + w + 6}" y="${y + 13}">${Math.round(e.summary.rps)} req/s</text>`)
      y += rowH
    }
    y += 22
  }
  const height = y + 10
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelW + barW + 120}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="14" font-weight="bold">${escape(`Throughput, closed loop (${meta.workers} workers, Node.js ${meta.node}, ${meta.date})`)}</text>
${parts.join('\n')}
</svg>
`
}

function escape (s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c])
}
