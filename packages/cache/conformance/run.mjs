// Runs the http-cache-tests suite against httpCache: a Fastify server whose catch-all
// route forwards to the suite's origin server, with httpCache in front of it.
//
//   node conformance/run.mjs [--mode reply|raw] [--id test-id] [--json file]
//
// --mode raw writes the forwarded response to reply.raw after hijacking the reply (as
// Next.js does) instead of sending it through reply.send. Everything binds 127.0.0.1.
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { parseArgs } from 'node:util'
import Fastify from 'fastify'
import { connect } from 'node:net'
import { httpCache } from '@spindle/cache'

const { values: args } = parseArgs({ options: { mode: { type: 'string', default: 'reply' }, id: { type: 'string' }, json: { type: 'string' } } })
const require = createRequire(import.meta.url)
const suiteDir = dirname(require.resolve('http-cache-tests/package.json'))
const fromSuite = (p) => import(join(suiteDir, p))

// The suite's origin, with its own handlers, bound to loopback only.
const [{ default: handleConfig }, { default: handleFile }, { default: handleState }, { default: handleTest }] = await Promise.all(
  ['server/handle-config.mjs', 'server/handle-file.mjs', 'server/handle-state.mjs', 'server/handle-test.mjs'].map(fromSuite))
const origin = createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1/')
  const segs = url.pathname.split('/'); segs.shift()
  const dispatch = segs.shift()
  if (dispatch === 'config') handleConfig(segs, req, res)
  else if (dispatch === 'test') handleTest(segs, req, res)
  else if (dispatch === 'state') handleState(segs, req, res)
  else handleFile(url, req, res)
})
origin.listen(0, '127.0.0.1')
await once(origin, 'listening')

const app = Fastify({ logger: process.env.LOG ? { level: 'error' } : false })
if (!app.supportedMethods.includes('M-SEARCH')) app.addHttpMethod('M-SEARCH', { hasBody: true })
app.removeAllContentTypeParsers()
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
await app.register(httpCache, { storeOptions: { maxBytes: 32 * 1024 * 1024 } })
const DROP = new Set(['transfer-encoding', 'content-length', 'keep-alive'])
const HOP = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'te', 'upgrade', 'content-length', 'transfer-encoding'])
app.route({
  method: app.supportedMethods,
  url: '/*',
  handler: async (request, reply) => {
    const headers = {}
    const raw = request.raw.rawHeaders
    for (let i = 0; i < raw.length; i += 2) {
      const n = raw[i].toLowerCase()
      if (!HOP.has(n)) headers[n] = n in headers ? [headers[n], raw[i + 1]].flat() : raw[i + 1]
    }
    const hasBody = request.body !== undefined && request.body !== null && request.raw.method !== 'GET' && request.raw.method !== 'HEAD'
    const res = await forward(request.raw.method, request.raw.url, headers, hasBody ? request.body : undefined)
    const body = res.body
    const out = Object.entries(res.headers).filter(([n]) => !DROP.has(n))
    if (args.mode === 'raw') {
      reply.hijack()
      for (const [n, v] of out) reply.raw.setHeader(n, v)
      reply.raw.statusCode = res.statusCode
      reply.raw.end(body)
      return reply
    }
    for (const [n, v] of out) reply.header(n, v)
    return reply.code(res.statusCode).send(body)
  },
})
// A minimal HTTP/1.1 client over a plain socket: the suite's origin sends malformed
// framing on purpose (a Content-Length that does not match the body, a 304 with a
// length), which a strict client rejects before the cache ever sees the response. Asking
// for Connection: close makes the body everything up to the end of the stream.
function forward (method, url, headers, body) {
  return new Promise((resolve, reject) => {
    const socket = connect(origin.address().port, '127.0.0.1')
    const chunks = []
    socket.on('data', (c) => chunks.push(c))
    socket.on('error', reject)
    socket.on('end', () => {
      const all = Buffer.concat(chunks)
      const split = all.indexOf('\r\n\r\n')
      if (split < 0) { reject(new Error('origin closed the connection without a response')); return }
      const [statusLine, ...lines] = all.subarray(0, split).toString('latin1').split('\r\n')
      const out = {}
      for (const line of lines) {
        const at = line.indexOf(':')
        const n = line.slice(0, at).trim().toLowerCase()
        const v = line.slice(at + 1).trim()
        out[n] = n in out ? [out[n], v].flat() : v
      }
      const statusCode = Number(statusLine.split(' ')[1])
      const noBody = method === 'HEAD' || statusCode === 204 || statusCode === 304
      resolve({ statusCode, headers: out, body: noBody ? Buffer.alloc(0) : all.subarray(split + 4) })
    })
    let head = `${method} ${url} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n`
    for (const [n, v] of Object.entries(headers)) for (const value of [v].flat()) head += `${n}: ${value}\r\n`
    if (body && body.length) head += `content-length: ${body.length}\r\n`
    socket.end(Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), body ?? Buffer.alloc(0)]))
  })
}
const base = await app.listen({ port: 0, host: '127.0.0.1' })

const { runTests, getResults } = await fromSuite('client/runner.mjs')
const { default: suites } = await fromSuite('tests/index.mjs')
const display = await fromSuite('lib/display.mjs')
const fetch = require(require.resolve('node-fetch', { paths: [suiteDir] }))

const NAMES = { '✅': 'pass', '⛔️': 'fail', '⚠️': 'optional-fail', Y: 'yes', N: 'no', '🔹': 'setup-fail', '⁉️': 'harness-fail', '-': 'untested', '↻': 'retry', '⚪️': 'dependency-fail' }
let selected = suites
if (args.id) {
  selected = suites.map((s) => ({ ...s, tests: s.tests.filter((t) => t.id === args.id).map((t) => ({ ...t, dump: true })) })).filter((s) => s.tests.length)
}
try {
  await runTests(selected, fetch, false, base)
  const results = getResults()
  if (args.json) writeFileSync(args.json, JSON.stringify(results, null, 2))
  const counts = {}
  const failed = []
  for (const suite of selected) {
    for (const test of suite.tests) {
      const kind = test.kind ?? 'required'
      // As the suite's own result pages count: a test whose prerequisite check failed is not run against the cache.
      const verdict = display.determineTestResult(suites, test.id, results, true)
      const label = NAMES[verdict[2]] ?? verdict[2]
      counts[kind] ??= {}
      counts[kind][label] = (counts[kind][label] ?? 0) + 1
      const r = results[test.id]
      if (kind === 'required' && r !== true) failed.push(`${test.id}: ${Array.isArray(r) ? r.join(' ') : String(r)}`)
    }
  }
  console.log(`mode: ${args.mode}`)
  for (const [kind, c] of Object.entries(counts)) console.log(`${kind}: ${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')}`)
  if (failed.length) console.log('required tests not passed:\n  ' + failed.join('\n  '))
} finally {
  await app.close()
  origin.closeAllConnections()
  origin.close()
}
