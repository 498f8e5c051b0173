// What each workload serves and how every configuration runs it. A configuration that
// cannot run a workload here says why (`unavailable`), and the table shows it.
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../../', import.meta.url))
const apps = fileURLToPath(new URL('../apps/', import.meta.url))
const spindleCli = root + 'packages/runtime/bin/spindle.js'
const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36'

const benchDir = fileURLToPath(new URL('..', import.meta.url))

/** A file inside a package installed directly in `dir` (pnpm links direct dependencies there). */
function installed (dir, pkg, file) {
  const path = `${dir}/node_modules/${pkg}/${file}`
  return existsSync(path) ? path : undefined
}

/** A Node.js command: `node script args` in every configuration, forked N times by cluster/PM2. */
function nodeJob (script, args) {
  return { script, args }
}

function spindle (dir, workers, port, extra = []) {
  // Shedding off: a closed loop of 100 connections is a queue by design, and a shed client
  // retries at once; bench/overload measures shedding under open-loop load.
  return { command: process.execPath, args: [spindleCli, 'start', ...extra, '-w', String(workers), '-p', String(port), '-H', '127.0.0.1', '--no-control', '--no-shedding'], cwd: dir }
}

function forked (kind, job, workers, port, cwd, env = {}) {
  if (kind === 'single') return { command: process.execPath, args: [job.script, ...job.args], cwd, env: { PORT: String(port), HOST: '127.0.0.1', ...env } }
  if (kind === 'cluster') return { command: process.execPath, args: [apps + 'cluster.mjs', String(workers), job.script, ...job.args], cwd, env: { PORT: String(port), HOST: '127.0.0.1', ...env } }
  return {
    command: process.execPath,
    args: [apps + 'pm2.mjs'],
    cwd,
    env: { PORT: String(port), HOST: '127.0.0.1', ...env, PM2_BENCH: JSON.stringify({ instances: workers, script: job.script, args: job.args }) },
  }
}

const PAGES = 2000

export const workloads = {
  hello: {
    title: 'hello-world JSON (Fastify)',
    path: '/',
    headers: {},
    // 1.5x a single Fastify process is beyond what one JavaScript load generator can send.
    open: false,
    prepare: () => undefined,
    launch (config, { workers, port }) {
      const dir = root + 'examples/fastify'
      const job = nodeJob(apps + 'fastify-single.mjs', [dir + '/app.js'])
      if (config === 'spindle') return spindle(dir, workers, port, [dir + '/app.js'])
      if (config === 'spindle-1') return spindle(dir, 1, port, [dir + '/app.js'])
      if (config === 'spindle-pool') return { unavailable: 'pool mode renders the framework adapters in its threads; plain Fastify runs on its one worker' }
      if (config === 'watt') return { unavailable: 'not measured for plain Fastify (Watt is measured on the Next.js workload)' }
      if (config === 'adapter' || config === 'adapter-pool') return { unavailable: 'the single process is already plain Fastify' }
      return forked(config, job, workers, port, dir)
    },
  },

  cache: {
    title: `${PAGES} server-rendered pages behind the HTTP cache`,
    path: '/page/1',
    // Every connection walks the same ${PAGES} pages: each page is rendered once per cache.
    paths: Array.from({ length: PAGES }, (_, i) => `/page/${i + 1}`),
    headers: {},
    // Cache hits run at tens of thousands per second, beyond the open-loop generator.
    open: false,
    prepare: () => undefined,
    launch (config, { workers, port }) {
      const job = nodeJob(apps + 'fastify-single.mjs', [apps + 'cached-pages.mjs'])
      if (config === 'spindle') return spindle(apps, workers, port, ['-c', apps + 'cached-pages.config.mjs'])
      if (config === 'spindle-1') return spindle(apps, 1, port, ['-c', apps + 'cached-pages.config.mjs'])
      if (config === 'spindle-pool') return { unavailable: 'pool mode renders the framework adapters in its threads; these pages are plain Fastify' }
      if (config === 'watt') return { unavailable: 'not measured: Watt caches outgoing fetch calls, not inbound pages' }
      if (config === 'adapter' || config === 'adapter-pool') return { unavailable: 'the single process is already plain Fastify' }
      return forked(config, job, workers, port, apps)
    },
  },

  next: {
    title: 'Next.js dynamic SSR page',
    path: '/dynamic',
    headers: { 'user-agent': BROWSER_UA },
    prepare () {
      const dir = root + 'examples/next'
      if (!existsSync(dir + '/.next/BUILD_ID')) return `examples/next has no production build: run "pnpm --filter @spindle/example-next build"`
      return undefined
    },
    launch (config, { workers, port, workDir }) {
      const dir = root + 'examples/next'
      const nextBin = installed(dir, 'next', 'dist/bin/next')
      if (!nextBin) return { unavailable: 'next is not installed in examples/next' }
      const job = nodeJob(nextBin, ['start', '-p', String(port), '-H', '127.0.0.1'])
      if (config === 'spindle') return spindle(dir, workers, port)
      if (config === 'spindle-1') return spindle(dir, 1, port)
      if (config === 'spindle-pool') return spindle(dir, workers, port, ['--mode', 'pool'])
      if (config === 'watt') return watt(dir, workers, port, workDir)
      if (config === 'adapter') return forked('single', nodeJob(apps + 'fastify-single.mjs', [dir + '/app.js']), 1, port, dir)
      // The same plain Fastify process, Next in N pool threads: the example's nextAdapter
      // has no threads option, so it takes SPINDLE_POOL_THREADS.
      if (config === 'adapter-pool') return forked('single', nodeJob(apps + 'fastify-single.mjs', [dir + '/app.js']), 1, port, dir, { SPINDLE_POOL_THREADS: String(workers) })
      return forked(config, job, workers, port, dir)
    },
  },

  'react-router': reactRouter('React Router SSR route', '/'),
  'react-router-io': reactRouter('React Router route whose loader waits 20 ms on I/O', '/orders'),
}

/** A page of examples/react-router: the same configurations, another path. */
function reactRouter (title, path) {
  return {
    title,
    path,
    headers: { 'user-agent': BROWSER_UA },
    prepare () {
      const dir = root + 'examples/react-router'
      if (!existsSync(dir + '/build/server/index.js')) return `examples/react-router has no build: run "pnpm --filter @spindle/example-react-router build"`
      return undefined
    },
    launch (config, { workers, port }) {
      const dir = root + 'examples/react-router'
      const serveBin = installed(benchDir, '@react-router/serve', 'bin.cjs')
      if (config === 'spindle') return spindle(dir, workers, port)
      if (config === 'spindle-1') return spindle(dir, 1, port)
      if (config === 'spindle-pool') return spindle(dir, workers, port, ['--mode', 'pool'])
      if (config === 'watt') return { unavailable: 'Watt has no React Router capability on the npm registry (@platformatic/react-router is not published there)' }
      if (config === 'adapter') return forked('single', nodeJob(apps + 'fastify-single.mjs', [dir + '/app.js']), 1, port, dir)
      // The example's reactRouterAdapter has no threads option either.
      if (config === 'adapter-pool') return forked('single', nodeJob(apps + 'fastify-single.mjs', [dir + '/app.js']), 1, port, dir, { SPINDLE_POOL_THREADS: String(workers) })
      if (!serveBin) return { unavailable: '@react-router/serve is not installed' }
      return forked(config, nodeJob(serveBin, [dir + '/build/server/index.js']), workers, port, dir)
    },
  }
}

/**
 * Platformatic Watt running the Next.js example with N workers. Watt reads watt.json from
 * the application folder, so the bench builds a folder of links to the example plus its
 * own watt.json, leaving the example untouched.
 */
function watt (dir, workers, port, workDir) {
  const wattBin = installed(benchDir, 'wattpm', 'bin/cli.js')
  if (!wattBin) return { unavailable: 'wattpm is not installed' }
  const app = `${workDir}/watt-next`
  rmSync(app, { recursive: true, force: true })
  mkdirSync(app, { recursive: true })
  for (const entry of readdirSync(dir)) {
    if (entry === 'watt.json' || entry.startsWith('spindle.config')) continue
    symlinkSync(`${dir}/${entry}`, `${app}/${entry}`)
  }
  writeFileSync(`${app}/watt.json`, JSON.stringify({
    $schema: 'https://schemas.platformatic.dev/@platformatic/next/3.54.0.json',
    runtime: {
      logger: { level: 'warn' },
      server: { hostname: '127.0.0.1', port },
      workers: { static: workers },
      managementApi: false,
      metrics: false,
      verticalScaler: { enabled: false },
    },
  }, null, 2))
  return { command: process.execPath, args: [wattBin, 'start', app], cwd: app, env: {} }
}
