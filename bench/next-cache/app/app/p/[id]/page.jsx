import { Suspense } from 'react'
import { connection } from 'next/server'
import { cacheLife, cacheTag } from 'next/cache'
import { appendFileSync } from 'node:fs'

// A product page: a per-request shell around a 'use cache' catalogue of 400 rows.
async function Catalogue ({ id }) {
  'use cache'
  cacheTag(`product-${id}`)
  cacheLife({ stale: 5, revalidate: 5, expire: 3600 })
  if (process.env.RENDER_LOG) appendFileSync(process.env.RENDER_LOG, 'r\n')
  const rows = []
  for (let i = 0; i < 400; i++) rows.push(<li key={i}>item {id}-{i}: {(i * 7919 + Number(id)) % 1000} units</li>)
  return <ul>{rows}</ul>
}

async function Product ({ params }) {
  await connection()
  const { id } = await params
  return <Catalogue id={id} />
}

export default function Page ({ params }) {
  return (
    <main>
      <h1>Product</h1>
      <Suspense fallback={<p>loading</p>}>
        <Product params={params} />
      </Suspense>
    </main>
  )
}
