import { timingSafeEqual } from 'node:crypto'
import { revalidateTag } from 'next/cache'

function authorized (request: Request): boolean {
  const token = process.env.REVALIDATE_TOKEN
  const given = request.headers.get('authorization') ?? ''
  const expected = `Bearer ${token}`
  return Boolean(token) && given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected))
}

// POST /api/revalidate?tag=greeting with `Authorization: Bearer $REVALIDATE_TOKEN`:
// every entry tagged `greeting` is rendered again on its next request, on every thread.
// Without REVALIDATE_TOKEN set, nobody may revalidate.
export async function POST (request: Request) {
  if (!authorized(request)) return Response.json({ error: 'unauthorized' }, { status: 401 })
  const tag = new URL(request.url).searchParams.get('tag')
  if (!tag || tag.length > 256) return Response.json({ error: 'tag is required' }, { status: 400 })
  revalidateTag(tag, { expire: 0 })
  return Response.json({ revalidated: tag })
}
