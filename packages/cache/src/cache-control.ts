// Parsing of the header fields HTTP caching depends on (RFC 9111, RFC 9110).

export type Directives = Map<string, string | true>

type HeaderValue = string | string[] | number | undefined

function lines (value: HeaderValue): string[] {
  if (value === undefined) return []
  return Array.isArray(value) ? value : [String(value)]
}

/**
 * Cache-Control directives, names lower-cased, quoted strings unescaped. Commas inside
 * quoted strings do not split, so `foo="max-age=1, x"` never yields a max-age. The first
 * occurrence of a directive wins.
 */
export function parseCacheControl (value: HeaderValue): Directives {
  const out: Directives = new Map()
  for (const line of lines(value)) {
    let i = 0
    while (i < line.length) {
      while (i < line.length && (line[i] === ',' || line[i] === ' ' || line[i] === '\t')) i++
      let name = ''
      while (i < line.length && line[i] !== '=' && line[i] !== ',') name += line[i++]
      name = name.trim().toLowerCase()
      let arg: string | true = true
      if (line[i] === '=') {
        i++
        if (line[i] === '"') {
          i++
          arg = ''
          while (i < line.length && line[i] !== '"') {
            if (line[i] === '\\' && i + 1 < line.length) i++
            arg += line[i++]
          }
          i++
          while (i < line.length && line[i] !== ',') i++
        } else {
          let raw = ''
          while (i < line.length && line[i] !== ',') raw += line[i++]
          arg = raw.trim()
        }
      }
      if (name !== '' && !out.has(name)) out.set(name, arg)
    }
  }
  return out
}

/** A delta-seconds directive argument: digits only (so `'3600'` or `-1` are invalid), else undefined. */
export function deltaSeconds (d: Directives, name: string): number | undefined {
  const v = d.get(name)
  if (typeof v !== 'string' || !/^\d+$/.test(v)) return undefined
  return Math.min(Number(v), 2 ** 31)
}

/** The field names of a qualified directive (`no-cache="set-cookie, x"`), lower-cased; empty when unqualified. */
export function qualifiedFields (d: Directives, name: string): string[] {
  const v = d.get(name)
  if (typeof v !== 'string') return []
  return v.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)
}

/** An HTTP-date (IMF-fixdate and the obsolete forms Date.parse accepts), in ms; NaN when invalid. */
export function parseHttpDate (value: HeaderValue): number {
  const all = lines(value)
  if (all.length !== 1) return NaN
  const text = all[0]!.trim()
  // Date.parse accepts plain numbers ("0") as years; an HTTP-date always names a weekday or month.
  if (!/[a-z]{3}/i.test(text)) return NaN
  return Date.parse(text)
}

/** The Age header in seconds; Infinity when it is not exactly one non-negative integer (a broken Age makes the response stale). */
export function parseAge (value: HeaderValue): number {
  const all = lines(value)
  if (all.length === 0) return 0
  if (all.length > 1) return Infinity
  const text = all[0]!.trim()
  return /^\d+$/.test(text) ? Number(text) : Infinity
}

/** A comma-separated list header (Vary, Connection), lower-cased, empty members dropped. */
export function parseList (value: HeaderValue): string[] {
  return lines(value).flatMap((line) => line.split(',')).map((s) => s.trim().toLowerCase()).filter(Boolean)
}

/** Entity tags of If-None-Match or ETag, for weak comparison (W/ prefix dropped). */
export function parseETags (value: HeaderValue): string[] {
  return lines(value).flatMap((line) => line.match(/(?:W\/)?"[^"]*"|\*/g) ?? []).map((t) => t.replace(/^W\//, ''))
}
