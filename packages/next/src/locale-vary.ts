// Pages Router i18n with locale detection on: Next.js answers the root (`/`, or the
// basePath) by the Accept-Language header, the NEXT_LOCALE cookie and, with `domains`, the
// Host: the default locale's page, or a 307 to `/fr` or to the locale's domain. Next sends
// that page with only `Vary: Accept-Encoding`, so a shared cache in front (httpCache) would
// serve one visitor's answer to the next. Every response to the root gets
// `Vary: Accept-Language, Cookie` (the Host is in the cache key already). Next detects the
// locale at the root only (router-server.js, getLocaleRedirect): other paths are untouched.
import { existsSync, readFileSync } from 'node:fs'
import type { OutgoingHttpHeader, ServerResponse } from 'node:http'
import { join } from 'node:path'

const LOCALE_FIELDS = ['Accept-Language', 'Cookie']

/** The build's config, as `next build` records it in `.next/required-server-files.json`: only the parts read here. */
interface BuildConfig {
  basePath?: string
  i18n?: { localeDetection?: boolean } | null
}

/**
 * For a build whose Next.js detects the locale (Pages Router i18n, `localeDetection` not
 * false): a test of a request target (path and query) for the root Next detects it on.
 * Undefined for any other build, so that no request pays for the test.
 */
export function localeRootTest (dir: string): ((url: string) => boolean) | undefined {
  const file = join(dir, '.next', 'required-server-files.json')
  if (!existsSync(file)) return undefined
  const config = (JSON.parse(readFileSync(file, 'utf8')) as { config?: BuildConfig }).config
  if (!config?.i18n || config.i18n.localeDetection === false) return undefined
  const basePath = typeof config.basePath === 'string' ? config.basePath : ''
  return (url) => isLocaleRoot(url, basePath)
}

/**
 * Whether Next looks for a locale to redirect to on this target: its path, less the
 * basePath, is `/` once Next's page-path denormalisation is applied (`/index` and `/index/`
 * are the root to it too).
 */
function isLocaleRoot (url: string, basePath: string): boolean {
  const q = url.indexOf('?')
  let path = q === -1 ? url : url.slice(0, q)
  if (basePath !== '' && (path === basePath || path.startsWith(basePath + '/'))) path = path.slice(basePath.length) || '/'
  return path === '/' || path === '/index' || path === '/index/'
}

/** A Vary value with Accept-Language and Cookie added to the fields already named, each once. */
export function withLocaleVary (value: OutgoingHttpHeader | undefined): string {
  const fields: string[] = []
  const seen = new Set<string>()
  for (const part of (Array.isArray(value) ? value : value === undefined ? [] : [String(value)])) {
    for (const raw of String(part).split(',')) {
      const field = raw.trim()
      if (field === '' || seen.has(field.toLowerCase())) continue
      seen.add(field.toLowerCase())
      fields.push(field)
    }
  }
  // `Vary: *` already says no stored response fits another request.
  if (seen.has('*')) return fields.join(', ')
  for (const field of LOCALE_FIELDS) {
    if (!seen.has(field.toLowerCase())) fields.push(field)
  }
  return fields.join(', ')
}

/** Header lines (name, value) with the Vary lines merged into one that names the locale fields. */
export function localeVaryLines (pairs: Array<[string, string]>): Array<[string, string]> {
  const vary = pairs.filter(([name]) => name.toLowerCase() === 'vary').map(([, value]) => value)
  return [...pairs.filter(([name]) => name.toLowerCase() !== 'vary'), ['vary', withLocaleVary(vary)]]
}

/**
 * Adds the locale fields to the Vary of the head `res` sends, however it is sent: by
 * writeHead (its own headers included), or by the first write or end. Installed over what
 * wraps `res` already (httpCache reads the head there), so they see the amended head.
 */
export function varyOnLocale (res: ServerResponse): void {
  const { writeHead, write, end } = res
  let done = false
  const amend = (): void => {
    if (done || res.headersSent) return
    done = true
    res.setHeader('vary', withLocaleVary(res.getHeader('vary')))
  }
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    amend()
    // writeHead's own headers replace those set before: a Vary among them is amended too.
    const at = typeof args[1] === 'string' ? 2 : 1
    const headers = args[at]
    if (headers !== null && typeof headers === 'object' && !Array.isArray(headers)) {
      const name = Object.keys(headers).find((n) => n.toLowerCase() === 'vary')
      if (name !== undefined) {
        const { [name]: value, ...rest } = headers as Record<string, OutgoingHttpHeader>
        args[at] = { ...rest, vary: withLocaleVary(value) }
      }
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['writeHead']
  res.write = function (this: ServerResponse, ...args: unknown[]) {
    amend()
    return (write as (...a: unknown[]) => boolean).apply(this, args)
  } as ServerResponse['write']
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    amend()
    return (end as (...a: unknown[]) => ServerResponse).apply(this, args)
  } as ServerResponse['end']
}
