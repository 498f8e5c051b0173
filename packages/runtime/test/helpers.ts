import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http'
import { fileURLToPath } from 'node:url'

export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))

export interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
  json: () => any
}

/** One HTTP request; a fresh connection unless an agent is given. Rejects on network errors and on timeout. */
export function get (url: string, opts: { agent?: Agent, timeout?: number, method?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method ?? 'GET', agent: opts.agent ?? false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) })
      })
      res.on('error', reject)
    })
    req.setTimeout(opts.timeout ?? 10_000, () => req.destroy(new Error(`timeout after ${opts.timeout ?? 10_000} ms: ${url}`)))
    req.on('error', reject)
    req.end()
  })
}

export async function waitFor<T> (what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeout = 15_000, every = 50): Promise<T> {
  const deadline = Date.now() + timeout
  let lastError: unknown
  while (Date.now() < deadline) {
    try {
      const value = await check()
      if (value) return value
    } catch (err) {
      lastError = err
    }
    await new Promise((resolve) => setTimeout(resolve, every))
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`)
}

/**
 * From the output of a process run with V8's --trace-gc-nvp: the ms V8's helper threads spent
 * on each minor GC (gc=s) of the isolate that ran the most of them (a worker that churned
 * through objects; the main thread's came before any worker started). Lines are tagged
 * [pid:isolate:thread].
 */
export function busiestScavenges (out: string): number[] {
  const byIsolate = new Map<string, number[]>()
  for (const m of out.matchAll(/^\[\d+:(0x[0-9a-f]+):\d+\][^\n]*gc=s [^\n]*background\.scavenge\.parallel=([\d.]+)/gm)) {
    byIsolate.set(m[1]!, [...(byIsolate.get(m[1]!) ?? []), Number(m[2])])
  }
  return [...byIsolate.values()].sort((a, b) => b.length - a.length)[0] ?? []
}
