import { useLoaderData } from 'react-router'

// A page whose data comes from elsewhere: the loader waits 20 ms, as a database query or an
// API call would, before a small render. Renders that wait run side by side
// (docs/overload.md#renders-that-wait).
export async function loader () {
  await new Promise((resolve) => setTimeout(resolve, 20))
  let x = Date.now() % 100000
  const orders = []
  for (let i = 1; i <= 40; i++) {
    x = (x * 1103515245 + 12345) % 2147483648
    orders.push({ id: 1000 + i, total: 10 + (x % 50000) / 100 })
  }
  return { orders }
}

export default function Orders () {
  const { orders } = useLoaderData()
  return (
    <main>
      <h1>Recent orders</h1>
      <ul>{orders.map((o) => <li key={o.id}>#{o.id}: ${o.total.toFixed(2)}</li>)}</ul>
    </main>
  )
}
