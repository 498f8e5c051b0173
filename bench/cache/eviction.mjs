// Hit ratio of CLOCK, SIEVE and S3-FIFO on Zipf-distributed requests (what a page cache
// sees: a few hot URLs, a long tail). Same request stream for every policy.
// Usage: node bench/cache/eviction.mjs [requests=2000000] [objects=100000]

const REQUESTS = Number(process.argv[2] ?? 2_000_000)
const OBJECTS = Number(process.argv[3] ?? 100_000)

function mulberry32 (seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function zipfStream (alpha, n, count, seed) {
  const cdf = new Float64Array(n)
  let sum = 0
  for (let i = 0; i < n; i++) { sum += 1 / Math.pow(i + 1, alpha); cdf[i] = sum }
  const rand = mulberry32(seed)
  // Shuffle ranks onto ids so popularity is not correlated with id order.
  const ids = new Int32Array(n).map((_, i) => i)
  for (let i = n - 1; i > 0; i--) { const j = Math.floor(rand() * (i + 1)); [ids[i], ids[j]] = [ids[j], ids[i]] }
  const out = new Int32Array(count)
  for (let r = 0; r < count; r++) {
    const u = rand() * sum
    let lo = 0; let hi = n - 1
    while (lo < hi) { const mid = (lo + hi) >> 1; if (cdf[mid] < u) lo = mid + 1; else hi = mid }
    out[r] = ids[lo]
  }
  return out
}

function clock (capacity) {
  const slots = new Int32Array(capacity).fill(-1)
  const ref = new Uint8Array(capacity)
  const where = new Map()
  let hand = 0
  return (k) => {
    const i = where.get(k)
    if (i !== undefined) { ref[i] = 1; return true }
    while (slots[hand] !== -1 && ref[hand]) { ref[hand] = 0; hand = (hand + 1) % capacity }
    if (slots[hand] !== -1) where.delete(slots[hand])
    slots[hand] = k; ref[hand] = 0; where.set(k, hand); hand = (hand + 1) % capacity
    return false
  }
}

function sieve (capacity) {
  // Doubly linked list, head = newest; hand walks from tail towards head.
  const nodes = new Map()
  let head = null; let tail = null; let hand = null
  const unlink = (n) => {
    if (n.prev) n.prev.next = n.next; else head = n.next
    if (n.next) n.next.prev = n.prev; else tail = n.prev
  }
  return (k) => {
    const n = nodes.get(k)
    if (n) { n.visited = true; return true }
    if (nodes.size >= capacity) {
      let o = hand ?? tail
      while (o.visited) { o.visited = false; o = o.prev ?? tail }
      hand = o.prev
      unlink(o); nodes.delete(o.key)
    }
    const m = { key: k, visited: false, prev: null, next: head }
    if (head) head.prev = m; else tail = m
    head = m
    nodes.set(k, m)
    return false
  }
}

function s3fifo (capacity) {
  // Small FIFO (10 %), main FIFO (90 %) with 2-bit frequency, ghost FIFO of keys.
  const smallCap = Math.max(1, Math.floor(capacity * 0.1))
  const mainCap = capacity - smallCap
  const small = []; let smallHead = 0
  const main = []; let mainHead = 0
  const ghost = new Map(); const ghostQ = []; let ghostHead = 0
  const freq = new Map(); const inSmall = new Set(); const inMain = new Set()
  const size = () => (small.length - smallHead) + (main.length - mainHead)
  const ghostAdd = (k) => {
    ghost.set(k, true); ghostQ.push(k)
    while (ghost.size > mainCap) { const g = ghostQ[ghostHead++]; ghost.delete(g) }
  }
  const evictMain = () => {
    for (;;) {
      const k = main[mainHead++]
      const f = freq.get(k)
      if (f > 0) { freq.set(k, f - 1); main.push(k) } else { inMain.delete(k); freq.delete(k); return }
    }
  }
  const evictSmall = () => {
    while (small.length - smallHead > 0) {
      const k = small[smallHead++]
      inSmall.delete(k)
      if (freq.get(k) > 1) { main.push(k); inMain.add(k); freq.set(k, 0); if (main.length - mainHead > mainCap) evictMain() } else { freq.delete(k); ghostAdd(k); return }
    }
  }
  const compact = () => {
    if (smallHead > 100000) { small.splice(0, smallHead); smallHead = 0 }
    if (mainHead > 100000) { main.splice(0, mainHead); mainHead = 0 }
    if (ghostHead > 100000) { ghostQ.splice(0, ghostHead); ghostHead = 0 }
  }
  return (k) => {
    if (inSmall.has(k) || inMain.has(k)) { freq.set(k, Math.min(3, freq.get(k) + 1)); return true }
    while (size() >= capacity) { if (small.length - smallHead >= smallCap || main.length - mainHead === 0) evictSmall(); else evictMain() }
    if (ghost.has(k)) { ghost.delete(k); main.push(k); inMain.add(k); freq.set(k, 0) } else { small.push(k); inSmall.add(k); freq.set(k, 0) }
    compact()
    return false
  }
}

const policies = { CLOCK: clock, SIEVE: sieve, 'S3-FIFO': s3fifo }
console.log(`requests ${REQUESTS}, objects ${OBJECTS}`)
console.log('alpha  cache%  ' + Object.keys(policies).map((p) => p.padStart(8)).join(' '))
for (const alpha of [0.7, 0.9, 1.1]) {
  const stream = zipfStream(alpha, OBJECTS, REQUESTS, 42)
  for (const pct of [0.5, 2, 10]) {
    const cap = Math.floor(OBJECTS * pct / 100)
    const ratios = []
    for (const make of Object.values(policies)) {
      const access = make(cap)
      let hits = 0
      for (let r = 0; r < REQUESTS; r++) if (access(stream[r])) hits++
      ratios.push(hits / REQUESTS)
    }
    console.log(`${alpha.toFixed(1).padStart(5)}  ${String(pct).padStart(6)}  ` + ratios.map((x) => (x * 100).toFixed(2).padStart(7) + '%').join(' '))
  }
}
