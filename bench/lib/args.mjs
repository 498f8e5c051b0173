// Command-line values of the benchmarks, checked before any server starts.
import { parseArgs } from 'node:util'

/**
 * The script's flags, parsed with node:util's parseArgs; `config` is parseArgs' own (options,
 * and strict or allowPositionals where a script needs them). A leading `--` (as
 * `npm run bench -- ...` passes it) is dropped first.
 */
export function benchArgs (config) {
  const args = process.argv.slice(2)
  if (args[0] === '--') args.shift()
  return parseArgs({ ...config, args })
}

/** `values[name]` (from node:util parseArgs) as a whole number of at least `min`; throws naming the flag otherwise. */
export function wholeArg (values, name, min) {
  const n = Number(values[name])
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(values[name])}`)
  return n
}
