import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { SPINDLE_RUNTIME_CLI_USAGE } from './errors.ts'
import { findConfigFile, loadConfigFile, type SpindleConfig } from './config.ts'
import { createConsoleLogger } from './logger.ts'
import { checkPlatform, holdSignals, serve } from './serve.ts'
import { resolveOptions, type ServeOptions } from './options.ts'
import { defaultWorkerCount } from './cpus.ts'

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version

const HELP = `spindle ${VERSION}: run a Fastify app on every core

Usage
  spindle start [app] [options]
  spindle dev [app] [options]
  spindle --help | --version

Commands
  start   run the app on every core, for production: NODE_ENV=production unless it is set
  dev     run it for development: NODE_ENV=development, 1 worker, no load shedding,
          host 127.0.0.1 and no control server unless given. The app picks its dev mode
          from NODE_ENV: nextAdapter { dev: true }, reactRouterAdapter { dev: true } (Vite, HMR)

app
  A module whose default export is a Fastify plugin; an optional \`options\` export
  holds the Fastify server options (the fastify-cli convention). Default: the config
  file's \`app\`, else ./app.js, ./app.mjs or ./app.ts.

Options (flags beat environment variables, which beat the config file)
  -w, --workers <n>           threads that render (workers, or pool threads in pool mode)
                                                        env WORKERS    default: CPU quota or cores (${defaultWorkerCount()} here)
      --mode <mode>           reusePort: workers share the port (SO_REUSEPORT, Linux)
                              pool: one Fastify worker, renders in a pool of threads (any OS)
                              auto: reusePort where the OS has it, else pool   default: auto
  -p, --port <n>              port for every worker     env PORT       default: 3000
  -H, --host <addr>           listen address            env HOST       default: 0.0.0.0
      --control-port <n>      control server port       env SPINDLE_CONTROL_PORT  default: 9091
      --control-host <addr>   control server address    env SPINDLE_CONTROL_HOST  default: 127.0.0.1
      --no-control            no control server
      --no-shedding           no load shedding (closed-loop capacity tests)
      --no-metrics            no request metrics in the workers
      --no-parallel-scavenge  workers collect their young generation on their own thread
      --shutdown-timeout <ms> time to finish in-flight requests on drain/shutdown
                                                        env SPINDLE_SHUTDOWN_TIMEOUT  default: 10000
      --stall-timeout <ms>    replace a worker whose event loop is stuck this long  default: 10000
  -c, --config <file>         config file               default: ./spindle.config.{ts,mts,js,mjs}
  -h, --help                  this help
  -v, --version               print the version

Config file (spindle.config.ts)
  import { defineConfig } from '@spindle/runtime'
  export default defineConfig({ app: './app.js', workers: 4, port: 3000, shutdownTimeout: 15000 })
  Every serve() option is accepted; see the runtime guide.

Control server (main thread; answers even when every worker is stuck)
  GET /healthz   liveness            GET /readyz   readiness (503 while shutting down)
  GET /status    workers as JSON     GET /metrics  Prometheus text

Signals
  SIGTERM, SIGINT  readiness goes false, in-flight requests finish, exit 0 within shutdownTimeout
                   (a second signal, 0.5 s or more after the first, exits at once)
  SIGHUP           rolling restart, one worker at a time

Requires Node.js >= 22.22; reusePort mode needs Linux, pool mode runs on any OS.`

function usage (message: string): never {
  throw new SPINDLE_RUNTIME_CLI_USAGE(`${message}\nRun "spindle --help" for usage.`)
}

function int (source: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined
  if (!/^\d+$/.test(value.trim())) usage(`${source} must be a whole number, got ${JSON.stringify(value)}`)
  return Number(value)
}

async function main (argv: string[]): Promise<void> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        workers: { type: 'string', short: 'w' },
        mode: { type: 'string' },
        port: { type: 'string', short: 'p' },
        host: { type: 'string', short: 'H' },
        'control-port': { type: 'string' },
        'control-host': { type: 'string' },
        'no-control': { type: 'boolean' },
        'no-shedding': { type: 'boolean' },
        'no-metrics': { type: 'boolean' },
        'no-parallel-scavenge': { type: 'boolean' },
        'shutdown-timeout': { type: 'string' },
        'stall-timeout': { type: 'string' },
        config: { type: 'string', short: 'c' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    })
  } catch (err) {
    usage((err as Error).message)
  }
  const { values, positionals } = parsed
  // `--port "$UNSET"` is a script's mistake, not a request for the default.
  for (const [name, value] of Object.entries(values)) {
    if (value === '') usage(`--${name} needs a value, got an empty string`)
  }
  if (values.help) { process.stdout.write(HELP + '\n'); return }
  if (values.version) { process.stdout.write(VERSION + '\n'); return }
  const [command, appArg, ...extra] = positionals
  if (command === undefined) { process.stdout.write(HELP + '\n'); return }
  if (command !== 'start' && command !== 'dev') usage(`unknown command ${JSON.stringify(command)}`)
  if (extra.length > 0) usage(`unexpected arguments: ${extra.join(' ')}`)

  checkPlatform()
  const dev = command === 'dev'
  // Signals that come while the config loads are noted, and serve() stops on them.
  holdSignals()
  // Set before the workers start: each gets a copy of the environment, and the app's own
  // modules (and the frameworks) read it to pick their development mode.
  if (dev) process.env.NODE_ENV = 'development'
  // As next start and react-router-serve do: unset, React and many libraries run their
  // development builds (a React Router page on one worker, back to back: 144 against 229
  // req/s, at 5.8 against 2.7 ms of CPU a page).
  else if (!process.env.NODE_ENV) process.env.NODE_ENV = 'production'
  const cwd = process.cwd()
  const configFile = values.config ? resolve(cwd, values.config) : findConfigFile(cwd)
  if (values.config && !existsSync(configFile!)) usage(`--config: no such file ${configFile}`)
  const config: SpindleConfig = configFile ? await loadConfigFile(configFile) : {}
  const env = process.env

  const app = appArg ? resolve(cwd, appArg) : config.app ?? ['app.js', 'app.mjs', 'app.ts'].map((f) => resolve(cwd, f)).find((f) => existsSync(f))
  if (!app) usage('no app given: pass its path (spindle start ./app.js) or set `app` in spindle.config')

  const pick = (flag: string, envName: string): number | undefined =>
    int(`--${flag}`, values[flag as keyof typeof values] as string | undefined) ?? int(envName, env[envName])

  for (const flag of ['control-port', 'control-host'] as const) {
    if (values['no-control'] && values[flag] !== undefined) usage(`--no-control and --${flag} contradict each other: give one of them`)
  }
  if (dev && values['control-host'] !== undefined && values['control-port'] === undefined) {
    usage('spindle dev runs no control server unless --control-port is given: --control-host alone does nothing')
  }
  const controlPort: number | false | undefined = values['no-control'] ? false : pick('control-port', 'SPINDLE_CONTROL_PORT')
  const logger = config.logger ?? createConsoleLogger()
  const options = {
    ...config,
    // One worker holds one dev server (its compiler, watcher and HMR clients); a compile
    // must not be shed; the dev server exposes source files, so only this machine sees it.
    ...(dev ? { workers: 1, shedding: false as const, host: '127.0.0.1', controlPort: false as const } : {}),
    app,
    logger,
    ...defined({
      workers: pick('workers', 'WORKERS'),
      // Checked with every other option: a bad value fails with SPINDLE_RUNTIME_INVALID_OPTION.
      mode: values.mode as ServeOptions['mode'],
      port: pick('port', 'PORT'),
      host: values.host ?? (env.HOST || undefined),
      controlPort,
      controlHost: values['control-host'] ?? (env.SPINDLE_CONTROL_HOST || undefined),
      shutdownTimeout: pick('shutdown-timeout', 'SPINDLE_SHUTDOWN_TIMEOUT'),
      stallTimeout: int('--stall-timeout', values['stall-timeout']),
      shedding: values['no-shedding'] ? (false as const) : undefined,
      metrics: values['no-metrics'] ? false : undefined,
      parallelScavenge: values['no-parallel-scavenge'] ? false : undefined,
    }),
  }

  // Checked before the banner, so a bad option is the first thing said (serve() checks again).
  const resolved = resolveOptions(options)
  process.stderr.write(resolved.mode === 'pool'
    ? `[spindle] starting 1 worker with ${plural(resolved.poolThreads, 'pool thread')} for ${app}\n`
    : `[spindle] starting ${plural(resolved.workers, 'worker')} for ${app}\n`)
  const started = Date.now()
  const server = await serve(options)
  const lines = [
    '',
    `  spindle ${VERSION} ready in ${Date.now() - started} ms (Node.js ${process.version}, pid ${process.pid})`,
    `  app      ${app}`,
    server.mode === 'pool'
      ? `  workers  1 Fastify thread, renders in ${plural(server.poolThreads, 'pool thread')} (pool mode)`
      : `  workers  ${plural(server.workers, 'thread')} on one port (SO_REUSEPORT)`,
    `  url      ${server.url}`,
    server.controlUrl ? `  control  ${server.controlUrl}  (/healthz /readyz /status /metrics)` : '  control  disabled',
    '',
  ]
  process.stdout.write(lines.join('\n') + '\n')
}

function plural (n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

function defined<T extends object> (obj: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> }
}

main(process.argv.slice(2)).catch((err: Error & { code?: string, cause?: Error }) => {
  const isUsage = err.code === 'SPINDLE_RUNTIME_CLI_USAGE'
  process.stderr.write(`[spindle] error${err.code ? ` ${err.code}` : ''}: ${err.message}\n`)
  if (err.cause?.stack && !isUsage) process.stderr.write(`\nCaused by: ${err.cause.stack}\n`)
  process.exit(isUsage ? 2 : 1)
})
