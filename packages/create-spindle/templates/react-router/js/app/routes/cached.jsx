import { randomUUID } from 'node:crypto'
import { useLoaderData } from 'react-router'

// Shared caches (httpCache in app.js) keep this page for 60 s and may serve it stale for
// 5 minutes while one request renders it again; purge it early by its tag with
// POST /cache/purge {"tags":["cached"]} on the control port.
export function headers () {
  return { 'Cache-Control': 's-maxage=60, stale-while-revalidate=300', 'Cache-Tag': 'cached' }
}

export function loader () {
  return { renderId: randomUUID(), at: new Date().toISOString() }
}

export default function Cached () {
  const { renderId, at } = useLoaderData()
  return (
    <main id="cached" data-render-id={renderId}>
      <h1>A cached page</h1>
      <p>Rendered at {at}, render {renderId}.</p>
    </main>
  )
}
