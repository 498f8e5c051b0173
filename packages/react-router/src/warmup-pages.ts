// The pages of a React Router build that a worker replacing another warms up with, when the
// configuration names no warm-up paths of its own (@spindle/runtime, docs/runtime.md#warm-up):
// every route that renders a component at a path without a dynamic (`:id`), optional
// (`lang?`) or splat (`*`) segment, under the build's basename. Resource routes (no
// component) are left out: they are APIs, and a GET to one may change something.
import type { ServerBuild } from 'react-router'

type Route = ServerBuild['routes'][string]

/** The route's full path pattern, its parents' joined in front; undefined inside a cycle. */
function fullPath (routes: ServerBuild['routes'], route: Route): string | undefined {
  const parts: string[] = []
  const seen = new Set<string>()
  for (let r: Route | undefined = route; r; r = r.parentId ? routes[r.parentId] : undefined) {
    if (seen.has(r.id)) return undefined
    seen.add(r.id)
    if (r.path) parts.unshift(r.path.replace(/^\/+|\/+$/g, ''))
  }
  return '/' + parts.filter(Boolean).join('/')
}

/** The static pages of `build`, '/' first, under its basename. */
export function staticPages (build: Pick<ServerBuild, 'routes' | 'basename'>): string[] {
  const pages = new Set<string>()
  for (const route of Object.values(build.routes)) {
    if (!route || typeof route.module?.default !== 'function') continue
    const path = fullPath(build.routes, route)
    if (path === undefined || path.split('/').some((s) => s.startsWith(':') || s.endsWith('?') || s.includes('*'))) continue
    pages.add(path)
  }
  const base = (build.basename ?? '/').replace(/\/+$/, '')
  return [...pages]
    .sort((a, b) => (a === '/' ? -1 : b === '/' ? 1 : a.localeCompare(b)))
    .map((path) => (path === '/' ? base || '/' : base + path))
}
