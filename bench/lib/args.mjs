// Command-line values of the benchmarks, checked before any server starts.

/** `values[name]` (from node:util parseArgs) as a whole number of at least `min`; throws naming the flag otherwise. */
export function wholeArg (values, name, min) {
  const n = Number(values[name])
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(values[name])}`)
  return n
}
