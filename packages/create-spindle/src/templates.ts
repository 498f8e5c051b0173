// The templates create-spindle knows: what each needs in package.json. The files live in
// templates/common (every template) and templates/<id>/{shared,js,ts}; versions follow
// the workspace catalog (a test checks it).

export type TemplateId = 'next' | 'react-router' | 'fastify'
type Deps = Readonly<Record<string, string>>

export interface Template {
  readonly id: TemplateId
  readonly label: string
  readonly hint: string
  /** Spindle packages the app imports (versions come from create-spindle itself). */
  readonly spindle: readonly string[]
  readonly dependencies: Deps
  readonly devDependencies: Deps
  /** Added when TypeScript is chosen. */
  readonly typescriptDevDependencies: Deps
  readonly scripts: Deps
  readonly typescriptScripts: Deps
  /** The path a browser opens first, and the text the page shows once it has hydrated. */
  readonly home: string
}

const typescript = { typescript: '~5.9.3', '@types/node': '^24.19.2' }
const react = { react: '^19.3.1', 'react-dom': '^19.3.1' }
const reactTypes = { '@types/react': '^19.3.0', '@types/react-dom': '^19.3.0' }
const reactRouter = '8.4.0'

export const templates: readonly Template[] = Object.freeze<Template[]>([
  {
    id: 'next',
    label: 'Next.js 16',
    hint: "App Router, 'use cache' on the shared cache, a revalidate route",
    spindle: ['@spindle/runtime', '@spindle/cache', '@spindle/next'],
    dependencies: { fastify: '^5.12.8', next: '16.4.6', ...react },
    devDependencies: {},
    typescriptDevDependencies: { ...typescript, ...reactTypes },
    scripts: { dev: 'spindle dev', build: 'next build', start: 'spindle start' },
    typescriptScripts: { typecheck: 'tsc --noEmit' },
    home: '/',
  },
  {
    id: 'react-router',
    label: 'React Router 8',
    hint: 'framework mode, a page cached for every worker by httpCache',
    spindle: ['@spindle/runtime', '@spindle/cache', '@spindle/react-router'],
    dependencies: {
      fastify: '^5.12.8',
      'react-router': reactRouter,
      '@react-router/node': reactRouter,
      isbot: '^5.2.3',
      ...react,
    },
    devDependencies: { '@react-router/dev': reactRouter, vite: '^7.3.8' },
    typescriptDevDependencies: { ...typescript, ...reactTypes },
    scripts: { dev: 'spindle dev', build: 'react-router build', start: 'spindle start' },
    typescriptScripts: { typecheck: 'react-router typegen && tsc --noEmit' },
    home: '/',
  },
  {
    id: 'fastify',
    label: 'Fastify',
    hint: 'a plain Fastify app on every core',
    spindle: ['@spindle/runtime'],
    dependencies: { fastify: '^5.12.8', '@fastify/static': '^10.1.11' },
    devDependencies: {},
    typescriptDevDependencies: typescript,
    scripts: {
      dev: 'node --watch-path=app.js node_modules/@spindle/runtime/bin/spindle.js dev',
      build: 'echo "nothing to build: spindle start runs app.js as it is"',
      start: 'spindle start',
    },
    typescriptScripts: {
      dev: 'node --watch-path=app.ts node_modules/@spindle/runtime/bin/spindle.js dev',
      build: 'tsc --noEmit',
    },
    home: '/',
  },
])

export const templateIds: readonly TemplateId[] = templates.map((t) => t.id)

export function findTemplate (id: string): Template | undefined {
  return templates.find((t) => t.id === id)
}
