import { createReadStream, type Stats } from 'node:fs'
import { stat } from 'node:fs/promises'
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
 * are immutable for a year; the rest get `maxAge`. Paths that would leave `root` are refused.
 * Resolves true when it answered.
 */
export async function serveClientFile (root: string, pathname: string, maxAge: number, reply: FastifyReply, head: boolean): Promise<boolean> {
  let decoded: string
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    return false
  }
  if (decoded.includes('\0')) return false
  const file = join(root, decoded)
  if (file !== root && !file.startsWith(root + sep)) return false
  let info: Stats
  try {
    info = await stat(file)
  } catch {
    return false
  }
  if (!info.isFile()) return false
  const immutable = decoded.startsWith('/assets/')
  reply
    .header('content-type', TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream')
    .header('content-length', info.size)
    .header('last-modified', info.mtime.toUTCString())
    .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : `public, max-age=${maxAge}`)
  if (head) await reply.send()
  else await reply.send(createReadStream(file))
  return true
}
