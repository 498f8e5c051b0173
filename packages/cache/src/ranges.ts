import { type HeaderLines, headerValue } from './cache-policy.ts'

/** Where a URL's stored 206 lives: beside its entry (`primary`), so full responses and parts never mix. */
export function partKey (primary: string): string {
  return `${primary}\n\0part`
}

/** Where a single-part 206 sits in its representation (RFC 9110 14.4): `bytes start-end/size`. */
export interface ContentRange { start: number, end: number, size: number }

/** One byte range (`bytes=a-b`, `a-`, `-n`) within `size`; undefined for anything else (the full response is sent). */
export function parseRange (header: string, size: number): [number, number] | 'unsatisfiable' | undefined {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return undefined
  let start: number
  let end: number
  if (m[1] === '') {
    start = Math.max(0, size - Number(m[2]))
    end = size - 1
  } else {
    start = Number(m[1])
    // last before first: an invalid range, ignored (RFC 9110 14.1.1); first past the end: unsatisfiable.
    if (m[2] !== '' && Number(m[2]) < start) return undefined
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  }
  if (start >= size || size === 0) return 'unsatisfiable'
  return [start, end]
}

/** If-Range: only a strong ETag or the exact Last-Modified date lets the range through. */
export function ifRangeMatches (ifRange: string | string[] | undefined, stored: HeaderLines): boolean {
  if (ifRange === undefined) return true
  const value = String(ifRange).trim()
  if (value.startsWith('"')) return headerValue(stored, 'etag') === value
  return headerValue(stored, 'last-modified') === value
}

/**
 * The Content-Range of a single-part 206 with a known complete length; undefined for
 * anything else (`*` length, multipart, several fields, malformed): such responses are
 * never stored.
 */
export function parseContentRange (value: string | string[] | undefined): ContentRange | undefined {
  if (typeof value !== 'string') return undefined
  const m = /^bytes (\d{1,15})-(\d{1,15})\/(\d{1,15})$/.exec(value.trim())
  if (!m) return undefined
  const [start, end, size] = [Number(m[1]), Number(m[2]), Number(m[3])]
  return start <= end && end < size ? { start, end, size } : undefined
}

/**
 * What a stored 206 holds: the bytes that arrived, from the first position its
 * Content-Range names (a body shorter than the range it declares is kept as an incomplete
 * response, RFC 9111 3.3, never stretched), and the representation's complete length.
 * Undefined when the body is empty or longer than declared: such a 206 is not stored.
 */
export function heldPart (lines: HeaderLines, bodyLength: number): ContentRange | undefined {
  const range = parseContentRange(headerValue(lines, 'content-range'))
  if (!range || bodyLength === 0 || bodyLength > range.end - range.start + 1) return undefined
  return { start: range.start, end: range.start + bodyLength - 1, size: range.size }
}

/**
 * The part of a stored 206 that answers a Range request, as `[first, last]` positions, or
 * undefined when it does not hold what was asked for (then the route answers). An
 * open-ended range (`bytes=N-`) whose first byte is held gets the bytes held from there on:
 * its 206 says in Content-Range where they end, and a client reads that to know what came
 * and asks for the rest (RFC 9110 15.3.7). A suffix (`bytes=-N`) names the last bytes of the
 * representation, which only a part that reaches the end holds.
 */
export function cutFromPart (rangeHeader: string, held: ContentRange): [number, number] | undefined {
  const wanted = parseRange(rangeHeader, held.size)
  if (!Array.isArray(wanted) || wanted[0] < held.start || wanted[0] > held.end) return undefined
  if (wanted[1] <= held.end) return wanted
  return /^bytes=\d+-$/.test(rangeHeader.trim()) ? [wanted[0], held.end] : undefined
}

/** A strong entity tag both responses carry, identical: only then are two parts one representation (RFC 9110 15.3.7.3). */
export function sameStrongValidator (a: HeaderLines, b: HeaderLines): boolean {
  const x = headerValue(a, 'etag')
  return typeof x === 'string' && x.startsWith('"') && x === headerValue(b, 'etag')
}
