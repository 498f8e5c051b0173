import { threadId } from 'node:worker_threads'

export const dynamic = 'force-dynamic'

// Real work on every request: a price table computed and rendered server-side.
function quotes (seed) {
  const rows = []
  let x = seed
  for (let i = 0; i < 250; i++) {
    x = (x * 1103515245 + 12345) % 2147483648
    const price = 50 + (x % 10000) / 100
    const change = ((x >> 8) % 2000 - 1000) / 100
    rows.push({ symbol: `SP${(x % 9000) + 1000}`, price, change, volume: (x >> 4) % 1000000 })
  }
  return rows.sort((a, b) => b.change - a.change)
}

export default async function Dynamic ({ searchParams }) {
  const { seed } = await searchParams
  const rows = quotes(Number(seed) || Date.now() % 100000)
  return (
    <>
      <h1>Market movers</h1>
      <p id="rendered-by">rendered at {new Date().toISOString()} by thread {threadId}</p>
      <table>
        <thead><tr><th>symbol</th><th>price</th><th>change</th><th>volume</th></tr></thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.symbol + r.volume}>
              <td>{r.symbol}</td><td>{r.price.toFixed(2)}</td>
              <td style={{ color: r.change < 0 ? 'crimson' : 'seagreen' }}>{r.change.toFixed(2)}%</td>
              <td>{r.volume.toLocaleString('en-US')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  )
}
