import { useState } from 'react'

export default function Home () {
  const [count, setCount] = useState(0)
  return (
    <main>
      <h1>{{name}}</h1>
      <p>React Router inside Fastify, on worker threads that share one port and one cache.</p>
      {/* Counts only once the page has hydrated. */}
      <button id="counter" onClick={() => setCount(count + 1)}>clicked {count} times</button>
    </main>
  )
}
