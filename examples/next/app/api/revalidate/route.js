import { timingSafeEqual } from 'node:crypto'
import { revalidateTag } from 'next/cache'

function authorized (request) {
  const token = process.env.REVALIDATE_TOKEN
  const given = request.headers.get('authorization') ?? ''
  const expected = `Bearer ${token}`
  return Boolean(token) && given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected))
}

// POST /api/revalidate?tag=demo with `Authorization: Bearer $REVALIDATE_TOKEN`: every page
// built from entries tagged `demo` is rendered again on its next request, on every thread
// and, with a fleet cache, on every process. Without REVALIDATE_TOKEN set, nobody may
// revalidate: an open endpoint that revalidates the tag a client names lets anyone fill the
// cache's tag table and so expire every page (docs/security.md).
export async function POST (request) {
  if (!authorized(request)) return Response.json({ error: 'unauthorized' }, { status: 401 })
  const tag = new URL(request.url).searchParams.get('tag')
  if (!tag || tag.length > 256) return Response.json({ error: 'tag is required' }, { status: 400 })
  revalidateTag(tag, { expire: 0 })
  return Response.json({ revalidated: tag })
}
