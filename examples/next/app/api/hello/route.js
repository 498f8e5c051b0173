import { threadId } from 'node:worker_threads'

export const dynamic = 'force-dynamic'

export function GET () {
  return Response.json({ hello: 'from a Next.js route handler', thread: threadId })
}
