import { randomUUID } from 'node:crypto'
import { Suspense } from 'react'
import { connection } from 'next/server'
import { cacheLife, cacheTag } from 'next/cache'

// A page rendered per request around a 'use cache' component tagged `demo`. Every thread
// of every process asks the cache handler for the component: with a fleet cache
// (SPINDLE_CACHE_URL) it is rendered once for the whole fleet, until
// `POST /api/revalidate?tag=demo` revalidates it everywhere.
async function Report () {
  'use cache'
  cacheTag('demo')
  cacheLife({ stale: 300, revalidate: 3600, expire: 86400 })
  const renderId = randomUUID()
  return (
    <section data-render-id={renderId}>
      <h1>A cached report</h1>
      <p>Rendered at {new Date().toISOString()}, render {renderId}.</p>
    </section>
  )
}

async function Dynamic () {
  await connection()
  return <Report />
}

export default function Cached () {
  return (
    <Suspense fallback={<p>loading</p>}>
      <Dynamic />
    </Suspense>
  )
}
