import { threadId } from 'node:worker_threads'
import { Link, useLoaderData } from 'react-router'

// Real work on every request: a catalogue computed and rendered server-side.
export function loader () {
  let x = Date.now() % 100000
  const products = []
  for (let i = 1; i <= 200; i++) {
    x = (x * 1103515245 + 12345) % 2147483648
    products.push({ id: i, name: `Product ${i}`, price: 5 + (x % 20000) / 100, stock: (x >> 8) % 500 })
  }
  products.sort((a, b) => a.price - b.price)
  return { products, thread: threadId, at: new Date().toISOString() }
}

export default function Catalogue () {
  const { products, thread, at } = useLoaderData()
  return (
    <main>
      <h1>Catalogue</h1>
      <p>rendered at {at} by thread {thread}</p>
      <ul>
        {products.map((p) => (
          <li key={p.id}><Link to={`/products/${p.id}`}>{p.name}</Link>: ${p.price.toFixed(2)} ({p.stock} in stock)</li>
        ))}
      </ul>
    </main>
  )
}
