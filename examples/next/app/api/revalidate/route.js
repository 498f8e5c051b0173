import { revalidateTag } from 'next/cache'

// POST /api/revalidate?tag=demo: every page built from entries tagged `demo` is rendered
// again on its next request, on every thread and, with a fleet cache, on every process.
export async function POST (request) {
  const tag = new URL(request.url).searchParams.get('tag')
  if (!tag || tag.length > 256) return Response.json({ error: 'tag is required' }, { status: 400 })
  revalidateTag(tag, { expire: 0 })
  return Response.json({ revalidated: tag })
}
