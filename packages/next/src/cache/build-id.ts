import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

// The build ID namespaces every key, so a new build never reads the entries of an old
// one still in shared memory (a rolling restart runs old and new workers side by side).
// Next hands only the incremental cache handler its directory (`serverDistDir`), once
// per request; the 'use cache' handler reads what that handler found.
const BUILD = Symbol.for('@spindle/next.build-id')

type Holder = { [BUILD]?: { serverDistDir: string, buildId: string | undefined } }

export function rememberServerDistDir (serverDistDir: unknown): void {
  if (typeof serverDistDir !== 'string') return
  const holder = globalThis as Holder
  if (holder[BUILD]?.serverDistDir === serverDistDir) return
  let buildId: string | undefined
  try {
    buildId = readFileSync(join(dirname(serverDistDir), 'BUILD_ID'), 'utf8').trim() || undefined
  } catch {
    // No BUILD_ID yet (during `next build`): nothing is cached until there is one.
    buildId = undefined
  }
  holder[BUILD] = { serverDistDir, buildId }
}

/** Key prefix for this build, or undefined while the build ID is unknown (then nothing is cached). */
export function buildNamespace (): string | undefined {
  const id = (globalThis as Holder)[BUILD]?.buildId
  return id === undefined ? undefined : `next:${id}:`
}
