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

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
// RFC 9110 5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept.
// Names are matched without regard to case, as most caches do; the shape is strict.
const IMF_FIXDATE = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/i
const RFC850 = /^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/i
const ASCTIME = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([a-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/i

function utc (year: number, month: string, day: number, h: string, m: string, sec: string): number {
  const mon = MONTHS.indexOf(month[0]!.toUpperCase() + month.slice(1).toLowerCase())
  if (mon < 0 || day < 1 || day > 31 || Number(h) > 23 || Number(m) > 59 || Number(sec) > 60) return NaN
  return Date.UTC(year, mon, day, Number(h), Number(m), Number(sec))
}

/** An HTTP-date in ms, parsed strictly (not Date.parse, which accepts almost anything); NaN when invalid. */
export function parseHttpDate (value: HeaderValue): number {
  const all = lines(value)
  if (all.length !== 1) return NaN
  const text = all[0]!.trim()
  let m = IMF_FIXDATE.exec(text)
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!)
  m = RFC850.exec(text)
  if (m) {
    // Two-digit years more than 50 years ahead are in the past century (RFC 9110 5.6.7).
    const now = new Date().getUTCFullYear()
    let year = Math.floor(now / 100) * 100 + Number(m[3])
    if (year > now + 50) year -= 100
    return utc(year, m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!)
  }
  m = ASCTIME.exec(text)
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!)
  return NaN
}

/**
 * The Age header in seconds (RFC 9111 5.1): the first value of the first line; 0 when it
 * is absent or not a non-negative integer (an invalid Age is ignored).
 */
export function parseAge (value: HeaderValue): number {
  const first = lines(value)[0]?.split(',')[0]?.trim()
  if (first === undefined || !/^\d+$/.test(first)) return 0
  return Math.min(Number(first), 2 ** 31)
}

// One member of a Structured Fields dictionary (RFC 8941 3.2): a lower-case key, then an
// optional bare item (integer, decimal, string, token, byte sequence, boolean), then parameters.
const SF_KEY = /^[a-z*][a-z0-9_\-.*]*/
const SF_ITEM = /^(?:-?\d{1,15}(?:\.\d{1,3})?|"(?:[^"\\]|\\["\\])*"|[A-Za-z*][!#$%&'*+\-.^_`|~:/0-9A-Za-z]*|:[A-Za-z0-9+/=]*:|\?[01])/
const DELTA_DIRECTIVES = new Set(['max-age', 's-maxage', 'stale-while-revalidate', 'stale-if-error'])

/**
 * A targeted cache-control field such as CDN-Cache-Control (RFC 9213): a Structured Fields
 * dictionary. Undefined when absent or invalid, in which case Cache-Control applies.
 */
export function parseTargetedCacheControl (value: HeaderValue): Directives | undefined {
  const all = lines(value)
  if (all.length === 0) return undefined
  const text = all.join(',')
  const out: Directives = new Map()
  let rest = text.replace(/^[ \t]+/, '')
  while (rest.length > 0) {
    const key = SF_KEY.exec(rest)?.[0]
    if (key === undefined) return undefined
    rest = rest.slice(key.length)
    let arg: string | true = true
    if (rest.startsWith('=')) {
      const item = SF_ITEM.exec(rest.slice(1))?.[0]
      if (item === undefined) return undefined
      rest = rest.slice(1 + item.length)
      if (item.startsWith('"')) arg = item.slice(1, -1).replace(/\\(.)/g, '$1')
      else if (item === '?1') arg = true
      else arg = item
      if (DELTA_DIRECTIVES.has(key) && !/^\d+$/.test(item)) return undefined
    }
    // Parameters are allowed and carry nothing a cache needs.
    while (rest.startsWith(';')) {
      const param = /^;[ ]*[a-z*][a-z0-9_\-.*]*(?:=[^;,]*)?/.exec(rest)?.[0]
      if (param === undefined) return undefined
      rest = rest.slice(param.length)
    }
    if (!out.has(key) && arg !== '?0') out.set(key, arg)
    rest = rest.replace(/^[ \t]+/, '')
    if (rest.length === 0) break
    if (!rest.startsWith(',')) return undefined
    rest = rest.slice(1).replace(/^[ \t]+/, '')
    if (rest.length === 0) return undefined
  }
  return out
}

/** A comma-separated list header (Vary, Connection), lower-cased, empty members dropped. */
export function parseList (value: HeaderValue): string[] {
  return lines(value).flatMap((line) => line.split(',')).map((s) => s.trim().toLowerCase()).filter(Boolean)
}

/** Entity tags of If-None-Match or ETag, for weak comparison (W/ prefix dropped). */
export function parseETags (value: HeaderValue): string[] {
  return lines(value).flatMap((line) => line.match(/(?:W\/)?"[^"]*"|\*/g) ?? []).map((t) => t.replace(/^W\//, ''))
}
