// 'use cache' on 2 workers: Spindle's shared store against Next's own per-thread cache.
//
//   flock /tmp/spindle-bench.lock node bench/next-cache/run.mjs [--duration 10] [--pages 200] [--connections 16] [--rounds 2]
//
// Builds bench/next-cache/app twice into bench/.work/next-cache/ (with withSpindle, and
// as Next ships it), serves each with `serve()` on 2 workers, and sends the same closed
// loop of requests over `--pages` product pages, each holding a 'use cache' catalogue
// with a 5 s revalidate. Reports requests/s and how many times each catalogue rendered.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { serve } from '@spindle/runtime'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')
const work = join(root, 'bench', '.work', 'next-cache')
const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    pages: { type: 'string', default: '200' },
    connections: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '2' },
  },
})
const duration = Number(values.duration)
const pages = Number(values.pages)
const connections = Number(values.connections)
const rounds = Number(values.rounds)

// Next, React and the packages come from the workspace: @spindle/next's test fixture
// resolves the same Next.js the package is tested with.
const fromNext = createRequire(join(root, 'packages', 'next', 'test', 'fixtures', 'cache-app', 'x.js'))
const modules = ['next', 'react', 'react-dom'].map((name) => [name, dirname(fromNext.resolve(`${name}/package.json`))])
const { createSharedStore } = await import(join(root, 'packages', 'cache', 'dist', 'index.js'))
const withSpindleModule = join(root, 'packages', 'next', 'dist', 'cache', 'index.js')

const variants = {
  shared: `import { withSpindle } from ${JSON.stringify(withSpindleModule)}\nexport default withSpindle({ cacheComponents: true, partialPrefetching: true })\n`,
  'per-thread': 'export default { cacheComponents: true, partialPrefetching: true }\n',
}

function prepare (name) {
  const dir = join(work, name)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(join(dir, 'node_modules'), { recursive: true })
  cpSync(join(here, 'app'), dir, { recursive: true })
  writeFileSync(join(dir, 'next.config.mjs'), variants[name])
  for (const [mod, path] of modules) symlinkSync(path, join(dir, 'node_modules', mod))
  execFileSync(process.execPath, [join(modules[0][1], 'dist', 'bin', 'next'), 'build'], {
    cwd: dir,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
    stdio: 'pipe',
    timeout: 300_000,
  })
  return dir
}

async function measure (name, dir) {
  const log = join(dir, 'renders.log')
  writeFileSync(log, '')
  const shared = name === 'shared' ? { spindleCache: createSharedStore({ maxBytes: 128 * 1024 * 1024 }).buffer } : {}
  const server = await serve({
    app: join(dir, 'server.mjs'),
    workers: 2,
    port: 0,
    host: '127.0.0.1',
    controlPort: false,
    handleSignals: false,
    env: { RENDER_LOG: log, NEXT_TELEMETRY_DISABLED: '1' },
    shared,
  })
  try {
    let n = 0
    const result = await autocannon({
      url: server.url,
      connections,
      duration,
      requests: [{ setupRequest: (req) => ({ ...req, path: `/p/${n++ % pages}` }) }],
    })
    const renders = readFileSync(log, 'utf8').split('\n').filter(Boolean).length
    return {
      name,
      requestsPerSecond: result.requests.average,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx + result.errors,
      renders,
      rendersPerPage: renders / pages,
    }
  } finally {
    await server.close()
  }
}

const built = Object.fromEntries(Object.keys(variants).map((name) => [name, prepare(name)]))
// Alternate the order (A B B A ...) so that drift on a shared machine favours neither.
const runs = []
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? Object.keys(variants) : Object.keys(variants).reverse()
  for (const name of order) runs.push(await measure(name, built[name]))
}
const mean = (name, field) => {
  const own = runs.filter((r) => r.name === name)
  return own.reduce((sum, r) => sum + r[field], 0) / own.length
}
const summary = Object.keys(variants).map((name) => ({
  name,
  requestsPerSecond: mean(name, 'requestsPerSecond'),
  p99Ms: mean(name, 'p99Ms'),
  renders: mean(name, 'renders'),
  rendersPerPage: mean(name, 'rendersPerPage'),
  non2xx: mean(name, 'non2xx'),
}))
const [shared, perThread] = summary
const table = [
  `'use cache' page, 2 workers, ${pages} pages, ${connections} connections, ${duration} s per run, ${rounds} runs per cache, revalidate 5 s (${new Date().toISOString()})`,
  '',
  '| cache | requests/s | p99 ms | renders | renders per page | errors |',
  '|---|---:|---:|---:|---:|---:|',
  ...summary.map((r) => `| ${r.name} | ${r.requestsPerSecond.toFixed(0)} | ${r.p99Ms.toFixed(0)} | ${r.renders.toFixed(0)} | ${r.rendersPerPage.toFixed(2)} | ${r.non2xx} |`),
  '',
  `shared / per-thread: throughput x${(shared.requestsPerSecond / perThread.requestsPerSecond).toFixed(2)}, renders x${(shared.renders / perThread.renders).toFixed(2)} (means of the runs)`,
  '',
  'runs: ' + runs.map((r) => `${r.name} ${r.requestsPerSecond.toFixed(0)} req/s ${r.rendersPerPage.toFixed(2)} renders/page`).join('; '),
]
console.log(table.join('\n'))
mkdirSync(join(here, 'results'), { recursive: true })
writeFileSync(join(here, 'results', 'latest.md'), table.join('\n') + '\n')
