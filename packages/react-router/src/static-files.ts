import { realpath, stat } from 'node:fs/promises'
import { join, sep } from 'node:path'
import send from '@fastify/send'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** Years of the hashed files under assets/, in ms as send takes it. */
const IMMUTABLE_MS = 365 * 24 * 3600 * 1000

/**
 * Serves a file of the client build if `pathname` names one. Hashed files under assets/
 * are immutable for a year; the rest get `maxAge` seconds. Never served: a path with a dot
 * segment or a dotfile/dot-directory anywhere in it (but `/.well-known/`, which Vite copies
 * from `public/` and app links and ACME checks read), and a file that is (or sits behind) a
 * symlink leading out of `root`. Resolves true when it answered; false lets the request go
 * on to the app.
 *
 * The answer is @fastify/send's (the file server under @fastify/static): content types by
 * extension, ETag and Last-Modified with 304s, Range requests with 206s, HEAD. Not
 * @fastify/static itself: a file that is not there must fall through to the framework
 * within the same catch-all route, which a second wildcard route cannot do.
 */
export async function serveClientFile (root: string, pathname: string, maxAge: number, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  let decoded: string
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    return false
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return false
  // Segments starting with '.' cover '.', '..' and dotfiles (.env, .git/) alike.
  if (decoded.split('/').some((segment, i) => segment.startsWith('.') && !(i === 1 && segment === '.well-known'))) return false
  const file = join(root, decoded)
  if (file !== root && !file.startsWith(root + sep)) return false
  try {
    if (!(await stat(file)).isFile()) return false
    // A symlink inside the build must not lead outside it.
    if (!(await realpath(file)).startsWith(await realRoot(root) + sep)) return false
  } catch {
    return false
  }
  const immutable = file.startsWith(join(root, 'assets') + sep)
  const answer = await send(request.raw, pathname, {
    root,
    dotfiles: 'allow',
    index: false,
    immutable,
    maxAge: immutable ? IMMUTABLE_MS : maxAge * 1000,
  })
  if (answer.type === 'directory' || (answer.type === 'error' && answer.statusCode === 404)) {
    answer.stream.destroy()
    return false
  }
  reply.code(answer.statusCode).headers(answer.headers)
  await reply.send(answer.stream)
  return true
}

const realRoots = new Map<string, Promise<string>>()
function realRoot (root: string): Promise<string> {
  let p = realRoots.get(root)
  if (!p) {
    p = realpath(root)
    realRoots.set(root, p)
  }
  return p
}
