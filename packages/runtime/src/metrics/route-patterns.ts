// The route patterns of one Fastify instance in a router of their own (find-my-way, the
// router Fastify uses), for the request metrics' labels of requests answered before their
// route's handler ran: a cache hit or an auth check in an app-wide onRequest hook, a 503 of
// admission, a failed validation. Requests that reach their handler are stamped there with
// the pattern, a constant of the route; this lookup is for the others only. Fastify's own
// `findRoute` cannot stand in: every route's handler in its router is the same function.
import FindMyWay, { type HTTPMethod } from 'find-my-way'
import type { FastifyInstance } from 'fastify'

type Router = ReturnType<typeof FindMyWay>

interface RouterOptions {
  ignoreTrailingSlash?: boolean
  ignoreDuplicateSlashes?: boolean
  caseSensitive?: boolean
  maxParamLength?: number
  useSemicolonDelimiter?: boolean
}

export class RoutePatterns {
  readonly #router: Router

  /** A router that matches as `app`'s does (its trailing-slash, case and parameter options). */
  constructor (app: FastifyInstance) {
    const config = app.initialConfig as RouterOptions & { routerOptions?: RouterOptions }
    const own = config.routerOptions ?? {}
    const options = {
      ignoreTrailingSlash: own.ignoreTrailingSlash ?? config.ignoreTrailingSlash ?? false,
      ignoreDuplicateSlashes: own.ignoreDuplicateSlashes ?? config.ignoreDuplicateSlashes ?? false,
      caseSensitive: own.caseSensitive ?? config.caseSensitive ?? true,
      maxParamLength: own.maxParamLength ?? config.maxParamLength ?? 100,
      useSemicolonDelimiter: own.useSemicolonDelimiter ?? config.useSemicolonDelimiter ?? false,
      // Fastify has accepted the route already; its checks are not repeated here.
      allowUnsafeRegex: true,
    }
    // useSemicolonDelimiter is read by find-my-way 9 but not in its types.
    this.#router = FindMyWay(options as Parameters<typeof FindMyWay>[0])
  }

  /** Adds a route as onRoute sees it. */
  add (method: string | string[], url: string): void {
    for (const m of Array.isArray(method) ? method : [method]) {
      try {
        this.#router.on(m.toUpperCase() as HTTPMethod, url, () => {}, url)
      } catch {
        // The same method and pattern again (routes apart only by a constraint, such as the
        // host or version): one entry names the pattern for all of them.
      }
    }
  }

  /** The pattern of the route `method` and `url` (a raw request's) would take; undefined when none matches. */
  find (method: string | undefined, url: string | undefined): string | undefined {
    if (method === undefined || url === undefined) return undefined
    try {
      const found = this.#router.find(method as HTTPMethod, url)
      return found ? found.store as string : undefined
    } catch {
      return undefined
    }
  }
}
