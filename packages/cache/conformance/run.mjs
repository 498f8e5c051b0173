// Runs the http-cache-tests suite (the current copy, beside the repository in
// ../shared/cache-tests, or where HTTP_CACHE_TESTS points) against httpCache: a Fastify
// server whose catch-all route forwards to the suite's origin server, with httpCache in
// front of it.
//
//   node conformance/run.mjs [--mode reply|raw] [--id test-id] [--json file]
//
// --mode raw writes the forwarded response to reply.raw after hijacking the reply (as
// Next.js does) instead of sending it through reply.send. Everything binds 127.0.0.1.
import { createServer } from 'node:http'
import { once } from 'node:events'
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import Fastify from 'fastify'
import { connect } from 'node:net'
import { fetch as undiciFetch } from 'undici'
import { httpCache } from '@spindle/cache'

// The suite's client gives fetch a dispatcher made with its own undici (to see interim
// responses): fetch must come from that same undici, not the one bundled with Node.
globalThis.fetch = undiciFetch

// `pnpm conformance -- --verbose` passes the `--` on: it is not an argument.
const { values: args } = parseArgs({ args: process.argv.slice(2).filter((a) => a !== '--'), options: { mode: { type: 'string', default: 'reply' }, id: { type: 'string' }, json: { type: 'string' }, verbose: { type: 'boolean', default: false } } })
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const sourceDir = resolve(process.env.HTTP_CACHE_TESTS ?? join(repoRoot, '..', 'shared', 'cache-tests'))
if (!existsSync(join(sourceDir, 'tests', 'index.mjs'))) {
  throw new Error(`http-cache-tests not found in ${sourceDir}: put the suite in ../shared/cache-tests beside the repository, or set HTTP_CACHE_TESTS`)
}
// A copy, so the suite's one dependency (undici) resolves to ours without installing into it.
const suiteDir = mkdtempSync(join(tmpdir(), 'cache-tests-'))
cpSync(join(sourceDir, 'test-engine'), join(suiteDir, 'test-engine'), { recursive: true })
cpSync(join(sourceDir, 'tests'), join(suiteDir, 'tests'), { recursive: true })
cpSync(join(sourceDir, 'package.json'), join(suiteDir, 'package.json'))
mkdirSync(join(suiteDir, 'node_modules'))
symlinkSync(dirname(createRequire(import.meta.url).resolve('undici/package.json')), join(suiteDir, 'node_modules', 'undici'), 'dir')
const fromSuite = (p) => import(pathToFileURL(join(suiteDir, p)).href)

// The suite's origin, with its own handlers, bound to loopback only.
const [{ default: handleConfig }, { default: handleFile }, { default: handleState }, { default: handleTest }] = await Promise.all(
  ['test-engine/server/handle-config.mjs', 'test-engine/server/handle-file.mjs', 'test-engine/server/handle-state.mjs', 'test-engine/server/handle-test.mjs'].map(fromSuite))
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
    // Interim responses are passed on as they came (a cache never stores them).
    for (const interim of res.interim) {
      if (interim.statusCode === 103) reply.raw.writeEarlyHints(interim.headers)
      else if (interim.statusCode === 102) reply.raw.writeProcessing()
    }
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
      let all = Buffer.concat(chunks)
      const parseHead = (head) => {
        const [statusLine, ...lines] = head.toString('latin1').split('\r\n')
        const out = {}
        for (const line of lines) {
          const at = line.indexOf(':')
          const n = line.slice(0, at).trim().toLowerCase()
          const v = line.slice(at + 1).trim()
          out[n] = n in out ? [out[n], v].flat() : v
        }
        return { statusCode: Number(statusLine.split(' ')[1]), headers: out }
      }
      // Interim (1xx) responses come before the final one.
      const interim = []
      while (/^HTTP\/1\.[01] 1\d\d /.test(all.subarray(0, 13).toString('latin1')) && all.indexOf('\r\n\r\n') >= 0) {
        interim.push(parseHead(all.subarray(0, all.indexOf('\r\n\r\n'))))
        all = all.subarray(all.indexOf('\r\n\r\n') + 4)
      }
      const split = all.indexOf('\r\n\r\n')
      if (split < 0) { reject(new Error('origin closed the connection without a response')); return }
      const { statusCode, headers } = parseHead(all.subarray(0, split))
      const noBody = method === 'HEAD' || statusCode === 204 || statusCode === 304
      resolve({ statusCode, headers, interim, body: noBody ? Buffer.alloc(0) : all.subarray(split + 4) })
    })
    let head = `${method} ${url} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n`
    for (const [n, v] of Object.entries(headers)) for (const value of [v].flat()) head += `${n}: ${value}\r\n`
    if (body && body.length) head += `content-length: ${body.length}\r\n`
    // write, not end: a half-closed socket makes Node's server abort a response it is still
    // producing (the suite's origin pauses some on purpose); Connection: close ends it.
    socket.write(Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), body ?? Buffer.alloc(0)]))
  })
}
const base = await app.listen({ port: 0, host: '127.0.0.1' })

const { runTests, getResults } = await fromSuite('test-engine/client/runner.mjs')
const { default: suites } = await fromSuite('tests/index.mjs')
const results = await fromSuite('test-engine/lib/results.mjs')

const NAMES = { '✅': 'pass', '⛔️': 'fail', '⚠️': 'optional-fail', Y: 'yes', N: 'no', '🔹': 'setup-fail', '⁉️': 'harness-fail', '-': 'untested', '↻': 'retry', '⚪️': 'dependency-fail' }
let selected = suites
if (args.id) {
  selected = suites.map((s) => ({ ...s, tests: s.tests.filter((t) => t.id === args.id).map((t) => ({ ...t, dump: true })) })).filter((s) => s.tests.length)
}
try {
  await runTests(selected, false, base)
  const outcome = getResults()
  if (args.json) writeFileSync(args.json, JSON.stringify(outcome, null, 2))
  const counts = {}
  const failed = []
  for (const suite of selected) {
    for (const test of suite.tests) {
      const kind = test.kind ?? 'required'
      // As the suite's own result pages count: a test whose prerequisite check failed is not run against the cache.
      const verdict = results.determineTestResult(suites, test.id, outcome, true)
      const label = NAMES[verdict[2]] ?? verdict[2]
      counts[kind] ??= {}
      counts[kind][label] = (counts[kind][label] ?? 0) + 1
      const r = outcome[test.id]
      if ((kind === 'required' || (args.verbose && kind === 'optimal')) && r !== true) failed.push(`${kind} ${test.id}: ${Array.isArray(r) ? r.join(' ') : String(r)}`)
    }
  }
  console.log(`mode: ${args.mode}`)
  for (const [kind, c] of Object.entries(counts)) console.log(`${kind}: ${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')}`)
  if (failed.length) console.log('tests not passed:\n  ' + failed.join('\n  '))
} finally {
  await app.close()
  origin.closeAllConnections()
  origin.close()
  rmSync(suiteDir, { recursive: true, force: true })
}
