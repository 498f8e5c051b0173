// Lays out what the Docker image ships (the Dockerfile runs it after `next build`): Next's
// standalone tree (the build and only the node_modules its pages need) with the browser's
// chunks and public/ copied in, the Fastify app and spindle config that serve it, and the
// server's own packages. Next itself comes with the tree.
//   node scripts/image.mjs <out folder>
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const out = resolve(process.argv[2] ?? 'image')
const tree = join('.next', 'standalone')
if (!existsSync(join(tree, 'server.js'))) {
  throw new Error(`${tree}/server.js is missing: run next build with output: 'standalone' first`)
}
mkdirSync(out, { recursive: true })
cpSync(tree, join(out, 'standalone'), { recursive: true, verbatimSymlinks: true })
cpSync(join('.next', 'static'), join(out, 'standalone', '.next', 'static'), { recursive: true })
if (existsSync('public')) cpSync('public', join(out, 'standalone', 'public'), { recursive: true })
for (const file of ['app.ts', 'app.js', 'spindle.config.ts', 'spindle.config.js']) {
  if (existsSync(file)) cpSync(file, join(out, file))
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8'))
const server = ['@spindle/runtime', '@spindle/cache', '@spindle/next', 'fastify']
writeFileSync(join(out, 'package.json'), JSON.stringify({
  name: pkg.name,
  private: true,
  type: 'module',
  dependencies: Object.fromEntries(server.map((name) => [name, pkg.dependencies[name]])),
  overrides: pkg.overrides ?? pkg.pnpm?.overrides,
}, null, 2) + '\n')
// --omit=peer leaves Next and React out: the tree's own copies serve the pages.
execFileSync('npm', ['install', '--omit=peer', '--omit=dev', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: out, stdio: 'inherit' })
