import { randomUUID } from 'node:crypto'
import { Suspense } from 'react'
import { connection } from 'next/server'
import { cacheLife, cacheTag } from 'next/cache'

// A 'use cache' component tagged `greeting`, in Spindle's shared cache: rendered once for
// every worker thread until `POST /api/revalidate?tag=greeting` revalidates it.
async function Greeting () {
  'use cache'
  cacheTag('greeting')
  cacheLife({ stale: 300, revalidate: 3600, expire: 86400 })
  const renderId = randomUUID()
  return (
    <section id="greeting" data-render-id={renderId}>
      <h1>A cached greeting</h1>
      <p>Rendered at {new Date().toISOString()}, render {renderId}.</p>
    </section>
  )
}

async function PerRequest () {
  await connection()
  return <Greeting />
}

export default function Cached () {
  return (
    <Suspense fallback={<p>loading</p>}>
      <PerRequest />
    </Suspense>
  )
}
