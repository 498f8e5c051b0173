import { describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const script = fileURLToPath(new URL('../conformance/run.mjs', import.meta.url))

function counts (output: string, kind: string): Record<string, number> {
  const line = output.split('\n').find((l) => l.startsWith(`${kind}:`)) ?? ''
  return Object.fromEntries(line.slice(kind.length + 1).split(',').map((part) => part.trim().split(' ')).filter((p) => p.length === 2).map(([k, v]) => [k!, Number(v)]))
}

describe('http-cache-tests conformance', () => {
  it('passes at least 148 of the 160 required tests', async () => {
    const { stdout } = await run(process.execPath, [script], { cwd: fileURLToPath(new URL('..', import.meta.url)), timeout: 120_000 })
    const required = counts(stdout, 'required')
    expect(required.pass, stdout).toBeGreaterThanOrEqual(148)
    // The two Set-Cookie tests: responses that set cookies are never shared, by design.
    expect(required['setup-fail'] ?? 0, stdout).toBeLessThanOrEqual(2)
  }, 150_000)
})
