import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { preferredLanguage, responseLanguage } from './accept-language.ts'
import { deltaSeconds, type Directives, parseCacheControl, parseList } from './cache-control.ts'
import { type KeyRequest, variantKey } from './cache-key.ts'
import { analyze, currentAge, describe, headerValue, type HeaderLines, mergeNotModified, type PolicyOptions, type ResponseMeta, toLines } from './cache-policy.ts'
import { captureResponse, interceptHead } from './capture.ts'
import { SPINDLE_CACHE_HOST_NOT_ALLOWED, SPINDLE_CACHE_INVALID_HOST } from './errors.ts'
import { type HttpCacheOptions, resolveHttpCacheOptions, type ResolvedHttpCacheOptions } from './plugin-options.ts'
import { purge, type PurgeRequest, type PurgeResult } from './purge.ts'
import { type CacheOutcome, stampOutcome } from './outcome-stamp.ts'
import { FleetStore } from './fleet/fleet-store.ts'
import { getCacheStore } from './fleet/thread-store.ts'
import { createSharedStore, type Lease, type SharedStore, type StoreStats } from './shared-store.ts'
import { heldPart, parseContentRange, partKey, sameStrongValidator } from './ranges.ts'
import { isLanguageAlias, isResponseMeta, isVariantOf, isVaryRecord, type LanguageAlias, type VaryRecord } from './entry-meta.ts'
import { type Found, sendLines, servePart, serveStored } from './stored-response.ts'
import { normalizeHost, requestHost, splitTarget } from './url-normalize.ts'

/** Per-route cache settings: `app.get(path, { config: { cache: ... } }, handler)`. */
export type RouteCacheConfig = false | {
  /**
   * The route's responses do not depend on the request's credentials (Cookie,
   * Authorization, credentialHeaders): requests with credentials may be answered from,
   * and fill, the cache as if the responses said `public`.
   */
  public?: boolean
}

export interface HttpCacheDecorator {
  readonly store: SharedStore
  /** Purges by key, tag and path prefix, for every thread. */
  purge (request: PurgeRequest): PurgeResult
  /** The cache key of a request, as the plugin computes it. */
  keyOf (request: KeyRequest): string
  /**
   * Puts the app's build in every key from now on (undefined: none), so a new build never
   * serves what an old one stored. The Next.js adapter calls it with Next's build ID.
   */
  setBuildId (buildId: string | undefined): void
  stats (): StoreStats
}

declare module 'fastify' {
  interface FastifyInstance {
    httpCache: HttpCacheDecorator
  }
  interface FastifyContextConfig {
    /** false: the cache leaves this route alone. See RouteCacheConfig. */
    cache?: RouteCacheConfig
  }
}

// Marks the plugin's own revalidation requests (fastify.inject); the value is a per-process secret.
const INTERNAL = 'x-spindle-cache-internal'
// Appended to the secret when the request being revalidated came over TLS.
const TLS_MARK = ' tls'
// Uncacheable answers are remembered this long so requests for them do not queue behind one
// another. Never for 429 or 5xx: a moment of overload must not turn coalescing off.
const PASS_MS = 30_000
const REFRESH_LEASE_MS = 30_000
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH', 'REPORT'])
const CONDITIONAL = ['if-none-match', 'if-modified-since', 'if-match', 'if-unmodified-since', 'if-range', 'range']
const EMPTY = Buffer.alloc(0)
const REWRITTEN_BY_URL_PARSER = /[#\\]/

interface Context {
  request: FastifyRequest
  reply: FastifyReply
  primary: string
  cc: Directives
  /** The canonical path, for path tags. */
  path: string
  /**
   * The Host was already canonical: only then may the response be stored. A Host that
   * differs only by case or a default port may be answered from the canonical entry.
   */
  canonical: boolean
  /** The request carries credentials and the route did not declare itself public: only public entries answer it. */
  credentialed: boolean
  /** Authorization is its only credential (see analyze in cache-policy.ts). */
  authorizationOnly: boolean
}

interface RouteResult { status: number, lines: HeaderLines, body: Buffer, requestTime: number, responseTime: number }

class HttpCache {
  readonly #fastify: FastifyInstance
  readonly #store: SharedStore
  // With a fleet tier: misses are looked up in Redis, entries and purges go fleet-wide.
  readonly #fleet: FleetStore | undefined
  readonly #o: ResolvedHttpCacheOptions
  readonly #policy: PolicyOptions
  readonly #secret = randomUUID()
  #build = ''

  constructor (fastify: FastifyInstance, store: SharedStore, o: ResolvedHttpCacheOptions, fleet?: FleetStore) {
    this.#fastify = fastify
    this.#store = store
    this.#fleet = fleet
    this.#o = o
    this.#policy = { heuristicFraction: o.heuristicFraction, heuristicMaxAge: o.heuristicMaxAge, staleOnError: o.staleOnError, maxErrorTtl: o.maxErrorTtl, targeted: o.targetedCacheControl }
  }

  setBuildId (buildId: string | undefined): void {
    this.#build = buildId === undefined || buildId === '' ? '' : `\n\0build ${buildId}`
  }

  keyOf (request: KeyRequest): string {
    return this.#o.key(request) + this.#build
  }

  #encrypted (request: FastifyRequest): boolean {
    return (request.raw.socket as { encrypted?: boolean } | null)?.encrypted === true
  }

  keyRequest (request: FastifyRequest, url = request.raw.url ?? '/', headers = request.raw.headers): KeyRequest {
    const encrypted = this.#encrypted(request)
    return { url, headers, encrypted, host: normalizeHost(requestHost(headers), encrypted) }
  }

  /**
   * Refuses a Host that is not a valid host[:port], or not allowed, before any route runs.
   * Returns whether the app reads it in the form the key holds (see Context.canonical).
   */
  #checkHost (request: FastifyRequest): boolean {
    const raw = requestHost(request.raw.headers)
    const host = normalizeHost(raw, this.#encrypted(request))
    if (host === undefined) throw new SPINDLE_CACHE_INVALID_HOST(JSON.stringify(raw))
    if (this.#o.allowedHosts && !this.#o.allowedHosts(host)) throw new SPINDLE_CACHE_HOST_NOT_ALLOWED(JSON.stringify(host))
    return typeof raw !== 'string' || host === raw
  }

  async onRequest (request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const headers = request.raw.headers
    if (headers[INTERNAL] !== undefined) {
      const marker = headers[INTERNAL]
      const ours = marker === this.#secret || marker === this.#secret + TLS_MARK
      delete headers[INTERNAL]
      // The raw list too: an adapter that renders in a pool thread rebuilds the request from
      // it, and the app must never see the secret (a page that shows its headers would
      // store it, and whoever read it could pass for the cache).
      dropRawHeader(request.raw.rawHeaders, INTERNAL)
      if (ours) {
        // A revalidation of a request that came over TLS: the route builds https URLs, as for the client.
        if (marker !== this.#secret) (request.raw.socket as { encrypted?: boolean }).encrypted = true
        return undefined
      }
    }
    const canonicalHost = this.#checkHost(request)
    const method = request.raw.method ?? 'GET'
    if (method !== 'GET' && method !== 'HEAD') {
      // Frameworks add headers (x-forwarded-*) while the route runs: key with what arrived.
      const arrived = { ...headers }
      if (!SAFE.has(method)) this.#invalidateAfter(request, reply, arrived)
      if (method === 'POST') {
        const ctx = this.#context(request, reply, canonicalHost)
        if (ctx?.canonical) this.#fillFromPost(ctx, arrived)
      }
      return undefined
    }
    const ctx = this.#context(request, reply, canonicalHost)
    if (!ctx) {
      this.#label(reply, 'BYPASS')
      return undefined
    }

    let found = this.#lookup(ctx.primary, request)
    if (!found && this.#fleet && !this.#store.get(`\0pass\n${ctx.primary}`, { peek: true })) {
      // Not in this process's memory: another process may have stored it (in Redis). Only
      // a request that would store its answer claims the key for the fleet when Redis has
      // none: a claim nobody fills holds every other process up to claimMs.
      await this.#fleet.get(ctx.primary, { peek: true, claim: this.#mayProduce(ctx, method) })
      await this.#loadVariant(this.#fleet, ctx.primary, request)
      found = this.#lookup(ctx.primary, request)
      // Another thread stored it meanwhile: nothing left to produce.
      if (found) this.#fleet.unclaim(ctx.primary)
    }
    if (headers.range !== undefined) {
      // Ranges are cut from a fresh stored response, complete or partial; otherwise the
      // route answers and a 206 it sends is kept for later ranges.
      if (found && this.#freshness(ctx, found).usable) {
        this.#serve(reply, found, 'HIT')
        return reply
      }
      if (method === 'HEAD') {
        // What a HEAD gets has no body: nothing of it may be stored.
        this.#label(reply, 'BYPASS')
        return undefined
      }
      const part = this.#lookupPart(ctx)
      if (part && servePart(reply, part, this.#o.statusHeader, 'HIT')) {
        this.#store.count('hit')
        return reply
      }
      this.#fill(ctx, undefined, true)
      return undefined
    }
    if (ctx.cc.has('only-if-cached')) {
      // The client forbids contacting the origin: a usable stored response or 504, nothing else.
      const freshness = found && this.#freshness(ctx, found)
      const staleAllowed = !freshness?.validate && found?.meta.mr !== 1 && ctx.cc.get('max-stale') === true && (!ctx.credentialed || found?.meta.au === 1)
      if (found && freshness && (freshness.usable || staleAllowed)) {
        this.#serve(reply, found, freshness.usable ? 'HIT' : 'STALE')
        return reply
      }
      this.#store.count('miss')
      sendLines(reply, 504, [], undefined, this.#o.statusHeader, 'MISS')
      return reply
    }
    if (found && await this.#answer(ctx, found)) return reply
    if (method === 'HEAD') {
      this.#store.count('miss')
      this.#label(reply, 'MISS')
      return undefined
    }
    if (!found) {
      // A stored beginning of the response: only the rest is asked of the route.
      const part = this.#lookupPart(ctx)
      if (part && await this.#complete(ctx, part)) {
        this.#fleet?.unclaim(ctx.primary)
        return reply
      }
    }
    let lease: Lease | undefined
    if (this.#o.coalesceTimeout !== false && this.#mayProduce(ctx, method) && !this.#store.get(`\0pass\n${ctx.primary}`, { peek: true })) {
      // The fleet store's lease also gives up the fleet's claim on the key if nothing is stored.
      lease = (this.#fleet ?? this.#store).tryLease(ctx.primary, this.#o.coalesceTimeout)
      if (lease) {
        // Another thread may have stored it between our lookup and our lease.
        const stored = this.#lookup(ctx.primary, request)
        if (stored && this.#freshness(ctx, stored).usable) {
          lease.release()
          this.#serve(reply, stored, 'HIT')
          return reply
        }
      } else {
        // Another request is producing this key: wait for it rather than render it again. If
        // it ends without storing anything (its client left mid-render), one of the waiters
        // takes the lease and the others wait for that one, up to coalesceTimeout in all,
        // unless the answer turned out not to be cacheable (then they need not queue).
        const until = Date.now() + this.#o.coalesceTimeout
        do {
          await this.#store.waitFor(ctx.primary, Math.max(1, until - Date.now()))
          const again = this.#lookup(ctx.primary, request)
          if (again && await this.#answer(ctx, again)) return reply
          if (this.#store.get(`\0pass\n${ctx.primary}`, { peek: true })) break
          lease = (this.#fleet ?? this.#store).tryLease(ctx.primary, this.#o.coalesceTimeout)
        } while (!lease && Date.now() < until)
      }
    }
    this.#fill(ctx, lease)
    return undefined
  }

  /**
   * Whether a request takes the lease on its key (in the fleet, the claim) to produce the
   * stored answer that others wait for. Requests with credentials rarely produce a shareable
   * response: they neither wait for nor hold up others; nor do a HEAD, a range or
   * only-if-cached, which store nothing.
   */
  #mayProduce (ctx: Context, method: string): boolean {
    return method === 'GET' && this.#o.coalesceTimeout !== false && !ctx.credentialed && ctx.canonical &&
      ctx.request.raw.headers.range === undefined && !ctx.cc.has('only-if-cached')
  }

  /**
   * What a request is to the cache: its key, directives and credentials; undefined when the
   * cache leaves it alone (the route opted out, an upgrade, a bypass header, shouldCache, or
   * dot segments the router does not resolve).
   */
  #context (request: FastifyRequest, reply: FastifyReply, canonicalHost: boolean): Context | undefined {
    const headers = request.raw.headers
    const route = request.routeOptions.config?.cache
    if (route === false || headers.upgrade !== undefined || this.#o.bypassHeaders.some((h) => headers[h] !== undefined) || (this.#o.shouldCache && !this.#o.shouldCache(request))) {
      return undefined
    }
    const url = request.raw.url ?? '/'
    const { path, query } = splitTarget(url)
    // A path spelled otherwise than its canonical form is neither answered from nor stored
    // under the canonical key: routers do not all read it alike. Fastify's decodes '/%78' as
    // '/x', Next.js's answers it 404; none resolves dot segments ('/a/../b' may reach a
    // wildcard route, not '/b').
    if (path + query !== url) return undefined
    // Nor a target the WHATWG URL parser reads otherwise: '#' starts a fragment it drops (and
    // Fastify's router reads what follows as the query), a backslash becomes '/'. A revalidation
    // (fastify.inject parses the target) would run another URL than the one keyed. Neither
    // is valid in an HTTP request target (RFC 9112 3.2), and no browser sends one.
    if (REWRITTEN_BY_URL_PARSER.test(url)) return undefined
    let credentials = 0
    let authorizationOnly = false
    if (route?.public !== true) {
      for (const h of this.#o.credentialHeaders) {
        if (headers[h] === undefined) continue
        credentials++
        authorizationOnly = h === 'authorization'
      }
    }
    const ctx: Context = {
      request,
      reply,
      primary: this.keyOf(this.keyRequest(request, path + query)),
      cc: parseCacheControl(headers['cache-control']),
      path,
      // A Host spelled otherwise than its canonical form ('App.Example', 'app.example:80')
      // reaches the app as spelled: the page may echo it, so it is not stored for everyone.
      canonical: canonicalHost,
      credentialed: credentials > 0,
      authorizationOnly: credentials === 1 && authorizationOnly,
    }
    if (ctx.cc.size === 0 && parseList(headers.pragma).includes('no-cache')) ctx.cc.set('no-cache', true)
    return ctx
  }

  /** Answers from a stored response; each request counts once in the stats, here or in #fill. */
  #serve (reply: FastifyReply, found: Found, label: 'HIT' | 'STALE' | 'REVALIDATED', extraLines?: HeaderLines): void {
    this.#store.count(label === 'STALE' ? 'stale' : 'hit')
    serveStored(reply, found, this.#o.statusHeader, label, extraLines)
  }

  #label (reply: FastifyReply, label: CacheOutcome): void {
    stampOutcome(reply.request.raw, label)
    if (this.#o.statusHeader) reply.raw.setHeader(this.#o.statusHeader, label)
  }

  /** The stored response for a request, if any (not counted: the outcome is, in #serve and #fill). */
  #lookup (primary: string, request: FastifyRequest): Found | undefined {
    // The primary key holds a response or, for responses with Vary, the record naming the variants.
    const entry = this.#store.get(primary, { peek: true })
    if (!entry) return undefined
    // Metadata of the wrong shape (see entry-meta.ts) is treated as no entry: the route answers and replaces it.
    if (!isVaryRecord(entry.meta)) return isResponseMeta(entry.meta) ? { key: primary, entry, meta: entry.meta } : undefined
    const { id, f } = entry.meta.vary
    const key = variantKey(primary, id, f, request.raw.headers, this.#o.credentialHeaders)
    const variant = this.#store.get(key, { peek: true })
    if (variant) return isResponseMeta(variant.meta) ? { key, entry: variant, meta: variant.meta } : undefined
    return f.includes('accept-language') ? this.#lookupByLanguage(primary, id, f, request) : undefined
  }

  /**
   * With a fleet tier, when the primary key (in memory, or just loaded) is a Vary record:
   * loads from Redis the variant this request selects and, for Accept-Language, its
   * language alias and the variant that names, so #lookup finds what another process
   * stored. Never claimed: variants are produced under the primary key's lease, and a
   * claim taken here would hold up the fleet for a request that may store nothing. What
   * is loaded passes the agent's checks (entry-meta.ts), and #lookup and #answer still
   * decide what this request may be served.
   */
  async #loadVariant (fleet: FleetStore, primary: string, request: FastifyRequest): Promise<void> {
    const record = this.#store.get(primary, { peek: true })
    if (!record || !isVaryRecord(record.meta)) return
    const { id, f } = record.meta.vary
    const headers = request.raw.headers
    const language = f.includes('accept-language') ? preferredLanguage(headers['accept-language']) : undefined
    const read = { peek: true, claim: false }
    // Variant and alias read together: one round trip to wait for, not two.
    const [variant, alias] = await Promise.all([
      fleet.get(variantKey(primary, id, f, headers, this.#o.credentialHeaders), read),
      language === undefined ? undefined : fleet.get(variantKey(primary, id, f, headers, this.#o.credentialHeaders, language), read),
    ])
    if (variant || !alias || !isLanguageAlias(alias.meta) || !isVariantOf(alias.meta.variant, primary + '\n\0vary ')) return
    await fleet.get(alias.meta.variant, read)
  }

  /**
   * A variant that declares (Content-Language) the one language this request prefers above
   * all others answers it, whatever else its Accept-Language lists: the app would choose that
   * language for it too. The other Vary fields still have to match exactly.
   */
  #lookupByLanguage (primary: string, id: string, fields: string[], request: FastifyRequest): Found | undefined {
    const language = preferredLanguage(request.raw.headers['accept-language'])
    if (language === undefined) return undefined
    const alias = this.#store.get(variantKey(primary, id, fields, request.raw.headers, this.#o.credentialHeaders, language), { peek: true })
    if (!alias || !isLanguageAlias(alias.meta) || !isVariantOf(alias.meta.variant, primary + '\n\0vary ')) return undefined
    const variant = this.#store.get(alias.meta.variant, { peek: true })
    if (!variant || !isResponseMeta(variant.meta)) return undefined
    const meta = variant.meta
    // The alias may outlive a replacement of its variant in another language.
    if (responseLanguage(headerValue(meta.h, 'content-language')) !== language) return undefined
    return { key: alias.meta.variant, entry: variant, meta }
  }

  /** A fresh stored 206 for this URL that this request may use (credentials as for any entry). */
  #lookupPart (ctx: Context): Found | undefined {
    const key = partKey(ctx.primary)
    const entry = this.#store.get(key, { peek: true })
    if (!entry || !isResponseMeta(entry.meta)) return undefined
    const found = { key, entry, meta: entry.meta }
    return this.#freshness(ctx, found).usable ? found : undefined
  }

  /**
   * Completes a stored first part (RFC 9111 3.4): the route is asked for the remaining
   * bytes, with If-Range. A 206 for exactly those bytes with the same strong ETag is joined
   * to the stored part; anything else, unless it is the whole response, means asking the
   * route for the whole response, and the part, which did not help, is dropped (so a part
   * stored on purpose cannot make every request run the route twice). False when the part
   * does not start at 0, or the whole response could not be stored: a large file then
   * streams from the route as usual instead of being gathered in memory here.
   */
  async #complete (ctx: Context, part: Found): Promise<boolean> {
    const held = heldPart(part.meta.h, part.entry.value.length)
    if (!held || held.start !== 0 || held.end + 1 >= held.size || held.size > this.#store.maxEntryBytes) return false
    const extra: Record<string, string> = { range: `bytes=${held.end + 1}-` }
    const etag = headerValue(part.meta.h, 'etag')
    if (typeof etag === 'string' && etag.startsWith('"')) extra['if-range'] = etag
    let result = await this.#runRoute(ctx.request, extra)
    if (result.status === 206) {
      const rest = parseContentRange(headerValue(result.lines, 'content-range'))
      const joins = rest !== undefined && rest.start === held.end + 1 && rest.end === held.size - 1 && rest.size === held.size &&
        result.body.length === rest.end - rest.start + 1 && sameStrongValidator(part.meta.h, result.lines)
      if (joins) result = { ...result, status: 200, lines: result.lines.filter(([n]) => n !== 'content-range'), body: Buffer.concat([part.entry.value, result.body]) }
      else {
        ;(this.#fleet ?? this.#store).delete(part.key)
        result = await this.#runRoute(ctx.request, {})
      }
    }
    this.#storeResponse(ctx, result)
    this.#store.count('miss')
    sendLines(ctx.reply, result.status, result.lines, result.body, this.#o.statusHeader, 'MISS')
    return true
  }

  /** Whether a stored response may answer this request as it is (RFC 9111 4.2, request directives included). */
  #freshness (ctx: Context, found: Found): { usable: boolean, validate: boolean, staleFor: number } {
    const { meta } = found
    const age = currentAge(meta, Date.now())
    let fresh = age < meta.fl && !found.entry.stale
    const maxAge = deltaSeconds(ctx.cc, 'max-age')
    if (maxAge !== undefined && age > maxAge) fresh = false
    const minFresh = deltaSeconds(ctx.cc, 'min-fresh')
    if (minFresh !== undefined && meta.fl - age < minFresh) fresh = false
    const validate = meta.nc === 1 || ctx.cc.has('no-cache')
    return { usable: fresh && !validate && (!ctx.credentialed || meta.au === 1), validate, staleFor: age - meta.fl }
  }

  async #answer (ctx: Context, found: Found): Promise<boolean> {
    const { meta } = found
    // A response stored for anyone never answers a request with credentials unless it said public.
    if (ctx.credentialed && !meta.au) return false
    const { usable, validate, staleFor } = this.#freshness(ctx, found)
    if (usable) {
      this.#serve(ctx.reply, found, 'HIT')
      return true
    }
    if (!validate && meta.mr !== 1) {
      const maxStale = ctx.cc.get('max-stale')
      if (maxStale === true || (maxStale !== undefined && staleFor <= (deltaSeconds(ctx.cc, 'max-stale') ?? -1))) {
        this.#serve(ctx.reply, found, 'STALE')
        return true
      }
      if (meta.swr !== undefined && staleFor <= meta.swr && !ctx.cc.has('max-age')) {
        this.#serve(ctx.reply, found, 'STALE')
        // Refreshed by a request without credentials only (see below), and with a canonical
        // target and Host: what it gets must not be stored (#updateFromNotModified).
        if (!ctx.credentialed && ctx.canonical) this.#refreshInBackground(ctx, found)
        return true
      }
    }
    // A request with credentials does not revalidate a shared entry: the route would answer
    // it for that user, and a 304's header fields (a CSRF token, a user id) would be merged
    // into what everyone gets. It runs the route as a miss; what it gets is stored only if
    // it may be shared.
    if (ctx.credentialed) return false
    return await this.#revalidateOnce(ctx, found, staleFor)
  }

  /**
   * One request per stale entry revalidates it at a time, in every thread: the others wait
   * for its answer (up to coalesceTimeout) and are served from what it stored, as a miss's
   * waiters are. Without it, every request that finds a hot page just expired (no
   * stale-while-revalidate) runs the route at once. Requests that would not store their
   * answer (credentials, a HEAD, a non-canonical target) revalidate for themselves.
   */
  async #revalidateOnce (ctx: Context, found: Found, staleFor: number): Promise<boolean> {
    if (this.#o.coalesceTimeout === false || !this.#mayProduce(ctx, ctx.request.raw.method ?? 'GET')) return await this.#revalidate(ctx, found, staleFor)
    const key = `\0revalidate\n${found.key}`
    const lease = this.#store.tryLease(key, this.#o.coalesceTimeout)
    if (lease) {
      try {
        return await this.#revalidate(ctx, found, staleFor)
      } finally {
        lease.release()
      }
    }
    await this.#store.waitFor(key, this.#o.coalesceTimeout)
    const again = this.#lookup(ctx.primary, ctx.request)
    if (again && this.#freshness(ctx, again).usable) {
      this.#serve(ctx.reply, again, 'HIT')
      return true
    }
    return await this.#revalidate(ctx, found, staleFor)
  }

  /** stale-if-error, or the plugin's own grace window, unless the response forbids serving it stale. */
  #canServeOnError (ctx: Context, found: Found, staleFor: number): boolean {
    if (found.meta.mr === 1 || found.meta.nc === 1 || ctx.cc.has('no-cache')) return false
    const window = Math.max(found.meta.sie ?? 0, deltaSeconds(ctx.cc, 'stale-if-error') ?? 0, this.#o.staleOnError)
    return staleFor <= window
  }

  async #revalidate (ctx: Context, found: Found, staleFor: number): Promise<boolean> {
    let result: RouteResult
    try {
      result = await this.#runRoute(ctx.request, validators(found.meta))
    } catch (err) {
      if (this.#canServeOnError(ctx, found, staleFor)) {
        this.#serve(ctx.reply, found, 'STALE')
        return true
      }
      throw err
    }
    if (result.status === 304) {
      const updated = this.#updateFromNotModified(ctx, found, result)
      // A Set-Cookie on the 304 belongs to this client only: sent, never stored.
      const cookies = result.lines.filter(([n]) => n === 'set-cookie')
      this.#serve(ctx.reply, updated, 'REVALIDATED', cookies)
      return true
    }
    if (result.status >= 500 && this.#canServeOnError(ctx, found, staleFor)) {
      this.#serve(ctx.reply, found, 'STALE')
      return true
    }
    this.#storeResponse(ctx, result)
    this.#store.count('miss')
    sendLines(ctx.reply, result.status, result.lines, result.body, this.#o.statusHeader, 'MISS')
    return true
  }

  #refreshInBackground (ctx: Context, found: Found): void {
    // One refresh per key for every thread of the process.
    const lease = this.#store.tryLease(`\0refresh\n${found.key}`, REFRESH_LEASE_MS)
    if (!lease) return
    const { request } = ctx
    this.#runRoute(request, validators(found.meta)).then((result) => {
      if (result.status === 304) this.#updateFromNotModified(ctx, found, result)
      else if (result.status < 500) this.#storeResponse(ctx, result)
    }, (err: unknown) => {
      request.log.warn({ err }, 'background revalidation failed')
    }).finally(() => lease.release())
  }

  /** Runs the route again through Fastify, uncached, without the client's conditions and ranges, with `extra` headers. */
  async #runRoute (request: FastifyRequest, extra: Record<string, string>): Promise<RouteResult> {
    const headers: Record<string, string | string[] | undefined> = {}
    // fastify.inject makes an HTTP/1.1 request: an HTTP/2 request's pseudo-headers are no
    // fields of it, and its authority is its Host (without one, inject makes up
    // `localhost:80`, and the page rendered for it would be stored under this request's key).
    for (const [name, value] of Object.entries(request.raw.headers)) if (!name.startsWith(':')) headers[name] = value
    const authority = request.raw.headers[':authority']
    if (headers.host === undefined && typeof authority === 'string') headers.host = authority
    for (const h of CONDITIONAL) delete headers[h]
    Object.assign(headers, extra)
    // inject's socket is never TLS: the marker tells onRequest to say so, so the route sees
    // the scheme the key holds (not `http` for an `https://` entry).
    headers[INTERNAL] = this.#encrypted(request) ? this.#secret + TLS_MARK : this.#secret
    const requestTime = Date.now()
    const res = await this.#fastify.inject({ method: 'GET', url: request.raw.url ?? '/', headers, remoteAddress: request.raw.socket?.remoteAddress ?? '127.0.0.1' })
    return { status: res.statusCode, lines: toLines(res.headers), body: res.rawPayload, requestTime, responseTime: Date.now() }
  }

  /**
   * The stored response updated with a 304's fields (RFC 9111 4.3.4), as this client gets it.
   * It replaces the stored one only when this request may write the entry (a canonical
   * target and Host: the app may echo their spelling in the 304's fields) and the updated
   * response may still be stored: a 304 that says `private` or `no-store` drops the entry,
   * and fields it names in `private="..."` or `no-cache="..."` are not stored.
   */
  #updateFromNotModified (ctx: Context, found: Found, result: RouteResult): Found {
    const lines = mergeNotModified(found.meta.h, result.lines.filter(([n]) => n !== 'set-cookie'))
    const age = result.lines.filter(([n]) => n === 'age')
    const verdict = analyze(found.meta.s, [...lines, ...age], result.requestTime, result.responseTime, { credentialed: false, noStore: false }, this.#policy)
    const meta = describe(found.meta.s, lines, result.requestTime, result.responseTime, this.#policy, headerValue(result.lines, 'age'))
    if (!ctx.canonical) return { key: found.key, entry: found.entry, meta }
    const store = this.#fleet ?? this.#store
    if (!verdict.ok) store.delete(found.key)
    else {
      store.set(found.key, found.entry.value, {
        tags: found.entry.tags,
        path: found.entry.path,
        staleAt: staleAt(verdict.meta),
        expireAt: Date.now() + verdict.keepFor,
        meta: verdict.meta,
      })
    }
    return { key: found.key, entry: found.entry, meta }
  }

  /**
   * Stores a response if RFC 9111 allows it; remembers for a while when it is not cacheable.
   * `answered`: what the response answered: a plain GET, a Range request, or a POST that
   * named its own URL in Content-Location (#fillFromPost).
   */
  #storeResponse (ctx: Context, r: RouteResult, varyHeaders = ctx.request.raw.headers, answered: 'get' | 'range' | 'post' = 'get'): boolean {
    const { request, primary } = ctx
    if (!ctx.canonical) return false
    // A 412 answers this request's preconditions (If-Match, If-Unmodified-Since), as a 304
    // does: it says nothing to a request without them.
    if (r.status === 412) return false
    if (r.status === 206) return answered === 'range' && this.#storePart(ctx, r)
    // To a Range request, only the whole response (200) is the URL's; a 416 is this request's.
    if (answered === 'range' && r.status !== 200) return false
    const verdict = analyze(r.status, r.lines, r.requestTime, r.responseTime, {
      credentialed: ctx.credentialed, authorizationOnly: ctx.authorizationOnly, noStore: ctx.cc.has('no-store'), explicitOnly: answered === 'post',
    }, this.#policy)
    if (!verdict.ok) {
      // What the route answers a Range or a POST request says nothing about the next GET.
      if (answered !== 'get') return false
      // Only the response's own verdict marks the key; a 304 to a conditional request, this
      // request's no-store or credentials, or a moment of overload (429, 5xx) says nothing
      // about the next request.
      // Nor does an answer that varies on a header this request carried (Next.js's redirect
      // of an `RSC: 1` request): the next request, without it, may well be cacheable, and one
      // crafted request must not turn coalescing off for the URL.
      const varied = parseList(headerValue(r.lines, 'vary'))
      const ownVariant = varied.includes('*') || varied.some((h) => varyHeaders[h] !== undefined)
      if (!ownVariant && verdict.reason !== 'request no-store' && verdict.reason !== 'credentials' && r.status !== 304 && r.status !== 429 && r.status < 500) {
        this.#store.set(`\0pass\n${primary}`, EMPTY, { expireAt: Date.now() + PASS_MS })
      }
      return false
    }
    const meta = verdict.meta
    if (r.status >= 500 && this.#holdsGoodResponse(primary, request)) return false
    let key = primary
    let languageAlias: { key: string, meta: LanguageAlias } | undefined
    const vary = parseList(headerValue(meta.h, 'vary'))
    if (vary.length > 0) {
      const record = this.#store.get(primary, { peek: true })
      let id: string
      if (record && isVaryRecord(record.meta) && record.meta.vary.f.join() === vary.join()) id = record.meta.vary.id
      else {
        id = randomUUID().slice(0, 8)
        ;(this.#fleet ?? this.#store).set(primary, EMPTY, { meta: { vary: { id, f: vary } } satisfies VaryRecord })
      }
      key = variantKey(primary, id, vary, varyHeaders, this.#o.credentialHeaders)
      const language = vary.includes('accept-language') ? responseLanguage(headerValue(meta.h, 'content-language')) : undefined
      if (language !== undefined) languageAlias = { key: variantKey(primary, id, vary, varyHeaders, this.#o.credentialHeaders, language), meta: { variant: key } }
    }
    const tags = this.#tags(meta)
    const expireAt = Date.now() + verdict.keepFor
    const stored = (this.#fleet ?? this.#store).set(key, r.body, { tags, path: ctx.path, staleAt: staleAt(meta), expireAt, meta })
    if (stored && languageAlias) (this.#fleet ?? this.#store).set(languageAlias.key, EMPTY, { tags, path: ctx.path, expireAt, meta: languageAlias.meta })
    if (stored) this.#store.delete(`\0pass\n${primary}`)
    return stored
  }

  /**
   * Keeps a 206 for later Range requests (and to be completed), under its own key beside the
   * URL's: a single part with a known length, as RFC 9111 3 allows any response; not one
   * with Vary (its variants are not tracked).
   */
  #storePart (ctx: Context, r: RouteResult): boolean {
    if (!heldPart(r.lines, r.body.length) || parseList(headerValue(r.lines, 'vary')).length > 0) return false
    const verdict = analyze(206, r.lines, r.requestTime, r.responseTime, { credentialed: ctx.credentialed, authorizationOnly: ctx.authorizationOnly, noStore: ctx.cc.has('no-store'), partial: true }, this.#policy)
    if (!verdict.ok) return false
    const meta = verdict.meta
    const range = ctx.request.raw.headers.range
    if (typeof range === 'string') meta.rq = range.trim()
    return (this.#fleet ?? this.#store).set(partKey(ctx.primary), r.body, { tags: this.#tags(meta), path: ctx.path, staleAt: staleAt(meta), expireAt: Date.now() + verdict.keepFor, meta })
  }

  /** The tags a response names in the tag header. */
  #tags (meta: ResponseMeta): string[] {
    const tagText = this.#o.tagHeader ? headerValue(meta.h, this.#o.tagHeader) : undefined
    return tagText === undefined ? [] : [tagText].flat().flatMap((t) => t.split(/[\s,]+/)).filter(Boolean)
  }

  /** A miss: the route answers the client as usual while a copy is taken for the store. */
  #fill (ctx: Context, lease: Lease | undefined, ranged = false): void {
    this.#store.count('miss')
    this.#keepCopy(ctx, ranged ? 'range' : 'get', { ...ctx.request.raw.headers }, () => { this.#label(ctx.reply, 'MISS') }, lease)
  }

  /**
   * Tees the route's response and stores the copy when it ends (#storeResponse), then lets
   * the lease go. `onHead` returning false: the response is not wanted, nothing is copied.
   */
  #keepCopy (ctx: Context, answered: 'get' | 'range' | 'post', varyHeaders: FastifyRequest['raw']['headers'], onHead: (status: number, lines: HeaderLines) => boolean | void, lease?: Lease): void {
    const requestTime = Date.now()
    captureResponse(ctx.reply.raw, this.#store.maxEntryBytes, onHead, (captured) => {
      try {
        if (captured) this.#storeResponse(ctx, { ...captured, requestTime, responseTime: Date.now() }, varyHeaders, answered)
      } catch (err) {
        ctx.request.log.error({ err }, 'storing a response in the cache failed')
      } finally {
        lease?.release()
      }
    })
  }

  /**
   * A POST whose 200 names the request's own URL in Content-Location, with explicit
   * freshness, is the URL's current representation: it is stored for the GETs that follow
   * (RFC 9110 9.3.3), after the POST invalidated what was stored before (#invalidateAfter).
   * Credentials and no-store count as for a GET. The body is copied only once the head
   * shows the response qualifies.
   */
  #fillFromPost (ctx: Context, arrived: FastifyRequest['raw']['headers']): void {
    this.#keepCopy(ctx, 'post', arrived, (status, lines) => status === 200 && this.#namesItself(ctx.request, arrived, headerValue(lines, 'content-location')))
  }

  /** Whether a Content-Location names the request's own target (same scheme, host, path and query). */
  #namesItself (request: FastifyRequest, headers: FastifyRequest['raw']['headers'], location: string | string[] | undefined): boolean {
    if (typeof location !== 'string') return false
    const { host, encrypted, url } = this.keyRequest(request, request.raw.url ?? '/', headers)
    if (host === undefined) return false
    const self = `${encrypted ? 'https' : 'http'}://${host}${url}`
    if (!URL.canParse(location, self)) return false
    const target = new URL(location, self)
    return target.href === new URL(self).href
  }

  /** A 5xx never replaces a response that was not an error: stale-if-error keeps serving it. */
  #holdsGoodResponse (primary: string, request: FastifyRequest): boolean {
    const found = this.#lookup(primary, request)
    return found !== undefined && found.meta.s < 400
  }

  /** After a successful unsafe request, drops the stored responses of its URL, Location and Content-Location (same host). */
  #invalidateAfter (request: FastifyRequest, reply: FastifyReply, headers: FastifyRequest['raw']['headers']): void {
    interceptHead(reply.raw, (status, lines) => {
      if (status < 200 || status >= 400) return
      // The request's own URL is keyed as it came; it is not parsed as a URL, which would read
      // a target such as '//other/x' as another host's '/x'.
      const url = request.raw.url ?? '/'
      const urls = [url]
      let base: URL | undefined
      for (const name of ['location', 'content-location']) {
        const value = headerValue(lines, name)
        if (typeof value !== 'string') continue
        base ??= locationBase(requestHost(headers), url)
        // An unparseable Location names nothing to invalidate.
        const target = URL.canParse(value, base.href) ? new URL(value, base) : undefined
        if (target?.host === base.host) urls.push(target.pathname + target.search)
      }
      // Through the fleet tier when there is one: an entry left in Redis would be copied
      // straight back into memory at the next miss.
      const store = this.#fleet ?? this.#store
      for (const url of urls) {
        const key = this.keyOf(this.keyRequest(request, url, headers))
        store.delete(key)
        store.delete(partKey(key))
      }
    })
  }
}

/** The URL a Location of the response to `target` is resolved against: the request's host, and its path and query as the key reads them. */
function locationBase (host: string | string[] | undefined, target: string): URL {
  const base = new URL(`http://${normalizeHost(host, false) || 'localhost'}`)
  const { path, query } = splitTarget(target)
  base.pathname = path
  base.search = query
  return base
}

/** The stored request headers a revalidation sends: the stored response's validators. */
function validators (meta: ResponseMeta): Record<string, string> {
  const out: Record<string, string> = {}
  const etag = headerValue(meta.h, 'etag')
  const lastModified = headerValue(meta.h, 'last-modified')
  if (typeof etag === 'string') out['if-none-match'] = etag
  if (typeof lastModified === 'string') out['if-modified-since'] = lastModified
  return out
}

function staleAt (meta: ResponseMeta): number {
  return meta.ia < 0 ? meta.rt : meta.rt + (meta.fl - meta.ia) * 1000
}

async function httpCachePlugin (fastify: FastifyInstance, options: HttpCacheOptions): Promise<void> {
  const o = resolveHttpCacheOptions(options)
  const given = o.store ?? getCacheStore(o.sharedName) ?? createSharedStore(o.storeOptions)
  const fleet = given instanceof FleetStore ? given : undefined
  const store = fleet ? fleet.memory : given as SharedStore
  const cache = new HttpCache(fastify, store, o, fleet)
  fastify.decorate('httpCache', Object.freeze({
    store,
    purge: (request: PurgeRequest) => purge(fleet ?? store, request),
    keyOf: (request: KeyRequest) => cache.keyOf(request),
    setBuildId: (buildId: string | undefined) => cache.setBuildId(buildId),
    stats: () => store.stats(),
  }))
  fastify.addHook('onRequest', (request, reply) => cache.onRequest(request, reply))
}

/** RFC 9111 shared cache in front of every route registered after it, backed by the shared store. */
export const httpCache = fp(httpCachePlugin, { name: '@spindle/cache', fastify: '5.x' })

/** Removes every `name` field (lower-case) from a raw header list of name, value pairs. */
function dropRawHeader (raw: string[], name: string): void {
  for (let i = raw.length - 2; i >= 0; i -= 2) {
    if (raw[i]!.toLowerCase() === name) raw.splice(i, 2)
  }
}
