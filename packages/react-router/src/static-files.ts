import { readdir, realpath, stat } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import send from '@fastify/send'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** A file Vite writes under assets/ with a content hash in its name (`entry.client-BNnyAUNy.js`). */
const HASHED_ASSET = /^assets\/[^/]+-[\w-]{8}\.[a-z0-9]+$/i

/** Years of the hashed files under assets/, in ms as send takes it. */
const IMMUTABLE_MS = 365 * 24 * 3600 * 1000

/**
 * The files of the client build, indexed once at start-up, and their answers. A page
 * request then costs a lookup instead of a `stat`: asking the file system on every request
 * took 2.3-3 % of a worker's time on the React Router example's page (CPU profile under
 * load, `fs.promises.stat` from this file). The build is written before the server starts
 * and not changed under it; a file added later is served after a restart, as with
 * @fastify/static's `wildcard: false`.
 *
 * Never indexed, so never served: a dotfile or dot-directory anywhere in a path (but
 * `/.well-known/`, which Vite copies from `public/` and app links and ACME checks read), a
 * name with a backslash or NUL, and a symlink (to a file or a folder) that leads out of
 * `root`. Hashed files under assets/ are immutable for a year; the rest get `maxAge`
 * seconds.
 *
 * The answer is @fastify/send's (the file server under @fastify/static): content types by
 * extension, ETag and Last-Modified with 304s, Range requests with 206s, HEAD. Not
 * @fastify/static itself: a path that names no file must fall through to the framework
 * within the same catch-all route, which a second wildcard route cannot do.
 */
export class ClientFiles {
  readonly #root: string
  /** Paths relative to the root, '/'-separated. */
  readonly #files: ReadonlySet<string>

  private constructor (root: string, files: ReadonlySet<string>) {
    this.#root = root
    this.#files = files
  }

  /** Walks `root` (a folder that exists) once. */
  static async index (root: string): Promise<ClientFiles> {
    const realRoot = await realpath(root)
    const files = new Set<string>()
    const seen = new Set<string>([realRoot])
    const walk = async (dir: string, prefix: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const name = entry.name
        if (name.includes('\\') || name.includes('\0')) continue
        if (name.startsWith('.') && !(prefix === '' && name === '.well-known')) continue
        const path = join(dir, name)
        const key = prefix + name
        let isFile = entry.isFile()
        let isDir = entry.isDirectory()
        if (entry.isSymbolicLink()) {
          // A symlink inside the build must not lead outside it.
          const target = await realpath(path).catch(() => undefined)
          if (target === undefined || !target.startsWith(realRoot + sep)) continue
          const info = await stat(target)
          isFile = info.isFile()
          isDir = info.isDirectory()
          if (isDir && seen.has(target)) continue
          if (isDir) seen.add(target)
        }
        if (isFile) files.add(key)
        else if (isDir) await walk(path, key + '/')
      }
    }
    await walk(root, '')
    return new ClientFiles(root, files)
  }

  get size (): number { return this.#files.size }

  /** Resolves true when `pathname` named a file of the build and it was answered; false lets the request go on to the app. */
  async serve (pathname: string, maxAge: number, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    if (this.#files.size === 0) return false
    let decoded: string
    try {
      decoded = decodeURIComponent(pathname)
    } catch {
      return false
    }
    if (decoded.includes('\0') || decoded.includes('\\')) return false
    // Segments starting with '.' cover '.', '..' and dotfiles (.env, .git/) alike; the index
    // holds none of them, this keeps join() from resolving them.
    if (decoded.split('/').some((segment, i) => segment.startsWith('.') && !(i === 1 && segment === '.well-known'))) return false
    const file = join(this.#root, decoded)
    if (!file.startsWith(this.#root + sep)) return false
    const key = relative(this.#root, file).split(sep).join('/')
    if (!this.#files.has(key)) {
      if (!HASHED_ASSET.test(key)) return false
      // A hashed file of another build (a browser that loaded a page before the last deploy
      // asks for its chunks): never a page, so a plain 404 rather than the app's 404 page,
      // a render and React Router's error in the log for each.
      reply.code(404).header('cache-control', 'no-store').header('x-content-type-options', 'nosniff').type('text/plain; charset=utf-8').send('Not Found\n')
      return true
    }
    const immutable = key.startsWith('assets/')
    const answer = await send(request.raw, pathname, {
      root: this.#root,
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
    // A browser must not guess a type for a file of the build: a user upload under public/
    // sniffed as HTML would run as the site's page.
    reply.header('x-content-type-options', 'nosniff')
    if (answer.statusCode < 300 && !reply.hasHeader('content-type')) reply.type('application/octet-stream')
    await reply.send(answer.stream)
    return true
  }
}
