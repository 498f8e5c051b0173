// The pages of a Next.js build that a worker replacing another warms up with, when the
// configuration names no warm-up paths of its own (@spindle/runtime, docs/runtime.md#warm-up):
// every page route without a dynamic segment, of the App Router and the Pages Router, under
// the build's basePath. Route handlers (app/**/route.*, pages/api) are left out: they are
// APIs, and a GET to one may change something. Next's own pages (/_not-found, /404, /500,
// /_error, …) are left out too.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

function readJson (file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}

function keys (value: unknown): string[] {
  return value !== null && typeof value === 'object' ? Object.keys(value) : []
}

/** A route path a GET can ask for as it is: no dynamic segment, none of Next's own. */
function isStaticPage (path: string): boolean {
  return path.startsWith('/') && !path.includes('[') && !/^\/_|^\/(?:api|404|500)(?:\/|$)/.test(path)
}

/** The static pages of the build in `dir` (its `.next`), '/' first, with the basePath. */
export function staticPages (dir: string): string[] {
  const next = join(dir, '.next')
  const pages = new Set<string>()
  // App Router: '/dynamic/page' -> '/dynamic'; '/api/hello/route' is a route handler.
  const app = readJson(join(next, 'app-path-routes-manifest.json')) as Record<string, unknown> | undefined
  for (const entry of keys(app)) {
    const path = app![entry]
    if (entry.endsWith('/page') && typeof path === 'string' && isStaticPage(path)) pages.add(path)
  }
  // Pages Router: '/about' -> 'pages/about.js'.
  for (const path of keys(readJson(join(next, 'server', 'pages-manifest.json')))) {
    if (isStaticPage(path)) pages.add(path)
  }
  const routes = readJson(join(next, 'routes-manifest.json')) as { basePath?: unknown } | undefined
  const basePath = typeof routes?.basePath === 'string' ? routes.basePath : ''
  return [...pages]
    .sort((a, b) => (a === '/' ? -1 : b === '/' ? 1 : a.localeCompare(b)))
    .map((path) => (basePath && path === '/' ? basePath : basePath + path))
}
