import { createReadStream, type Stats } from 'node:fs'
import { realpath, stat } from 'node:fs/promises'
import { extname, join, sep } from 'node:path'
import type { FastifyReply } from 'fastify'

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.webmanifest': 'application/manifest+json',
  '.xml': 'application/xml',
  '.wasm': 'application/wasm',
}

/**
 * Serves a file of the client build if `pathname` names one. Hashed files under assets/
 * are immutable for a year; the rest get `maxAge`. Never served: a path with a dot segment
 * or a dotfile/dot-directory anywhere in it, and a file that is (or sits behind) a symlink
 * leading out of `root`. Resolves true when it answered; false lets the request go on to
 * the app.
 *
 * Hand-written rather than @fastify/static: a file that is not there must fall through to
 * the framework within the same catch-all route, which a second wildcard route cannot do.
 */
export async function serveClientFile (root: string, pathname: string, maxAge: number, reply: FastifyReply, head: boolean): Promise<boolean> {
  let decoded: string
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    return false
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return false
  // Segments starting with '.' cover '.', '..' and dotfiles (.env, .git/) alike.
  if (decoded.split('/').some((segment) => segment.startsWith('.'))) return false
  const file = join(root, decoded)
  if (file !== root && !file.startsWith(root + sep)) return false
  let info: Stats
  let real: string
  try {
    info = await stat(file)
    if (!info.isFile()) return false
    // A symlink inside the build must not lead outside it.
    real = await realpath(file)
  } catch {
    return false
  }
  if (!real.startsWith(await realRoot(root) + sep)) return false
  const immutable = file.startsWith(join(root, 'assets') + sep)
  reply
    .header('content-type', TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream')
    .header('content-length', info.size)
    .header('last-modified', info.mtime.toUTCString())
    .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : `public, max-age=${maxAge}`)
  if (head) await reply.send()
  else await reply.send(createReadStream(real))
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
