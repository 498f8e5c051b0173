/**
 * Accept-Language (RFC 9110 12.5.4) for matching Vary: two requests whose lists say the
 * same preferences select the same variant. Language ranges are case-insensitive (RFC
 * 4647) and a list's order carries no preference among equal weights (RFC 9110 12.4.2),
 * so a list is compared as its ranges, lower-cased, sorted by weight then name.
 */

// language-range (RFC 4647 2.1) and weight (RFC 9110 12.4.2).
const ITEM = /^([a-z]{1,8}(?:-[a-z\d]{1,8})*|\*)(?:[ \t]*;[ \t]*q=(0(?:\.\d{0,3})?|1(?:\.0{0,3})?))?$/i

interface Range { tag: string, q: number }

function parse (value: string | string[] | undefined): Range[] | undefined {
  if (value === undefined) return undefined
  const out: Range[] = []
  for (const part of [value].flat().join(',').split(',')) {
    const item = part.trim()
    if (item === '') continue
    const m = ITEM.exec(item)
    if (!m) return undefined
    out.push({ tag: m[1]!.toLowerCase(), q: m[2] === undefined ? 1 : Number(m[2]) })
  }
  return out
}

/**
 * The canonical form of an Accept-Language value, or undefined when it does not parse
 * (then it is compared as received, so nothing unparsable is ever merged with another).
 */
export function normalizeAcceptLanguage (value: string | string[] | undefined): string | undefined {
  const ranges = parse(value)
  if (ranges === undefined) return undefined
  ranges.sort((a, b) => b.q - a.q || (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0))
  return ranges.map((r) => r.q === 1 ? r.tag : `${r.tag};q=${r.q}`).join(',')
}

/**
 * The one language the request prefers above all others (lower-cased), or undefined when
 * none does: no header, a wildcard or a tie at the top, or an unparsable value.
 */
export function preferredLanguage (value: string | string[] | undefined): string | undefined {
  const ranges = parse(value)
  if (!ranges || ranges.length === 0) return undefined
  let best = ranges[0]!
  let tie = false
  for (const r of ranges.slice(1)) {
    if (r.q > best.q) { best = r; tie = false } else if (r.q === best.q && r.tag !== best.tag) tie = true
  }
  return tie || best.q === 0 || best.tag === '*' ? undefined : best.tag
}

/** The single language a response declares in Content-Language (lower-cased), or undefined. */
export function responseLanguage (value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined
  const tags = [value].flat().join(',').split(',').map((t) => t.trim()).filter(Boolean)
  return tags.length === 1 && /^[a-z]{1,8}(?:-[a-z\d]{1,8})*$/i.test(tags[0]!) ? tags[0]!.toLowerCase() : undefined
}
