'use client'
import { useState } from 'react'

// A client component: it counts only once the page has hydrated.
export default function Counter () {
  const [count, setCount] = useState(0)
  return <button id="counter" onClick={() => setCount(count + 1)}>clicked {count} times</button>
}
