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
