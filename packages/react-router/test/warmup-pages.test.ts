// The pages reactRouterAdapter announces for the runtime's warm-up: a worker that replaces
// another renders the build's static pages before it takes traffic, not only '/'.
import { beforeAll, describe, expect, it } from 'vitest'
import { pathToFileURL } from 'node:url'
import type { ServerBuild } from 'react-router'
import { staticPages } from '../src/warmup-pages.ts'
import { buildApp, serverBuild } from './fixtures/build.ts'

const page = { default: () => null }
const resource = { loader: () => null }
function build (routes: Record<string, { parentId?: string, path?: string, index?: boolean, module: object }>, basename = '/'): Pick<ServerBuild, 'routes' | 'basename'> {
  return { basename, routes: Object.fromEntries(Object.entries(routes).map(([id, r]) => [id, { id, ...r }])) as unknown as ServerBuild['routes'] }
}

beforeAll(() => { buildApp() })

describe('the build\'s static pages for the warm-up', () => {
  it('lists the routes with a component at a static path of the fixture\'s build, \'/\' first, and no resource route', async () => {
    const fixture = await import(pathToFileURL(serverBuild).href) as ServerBuild
    // routes.js: index home, about, form, boom and slow render a component; go, api/data,
    // cookies and the others are resource routes.
    expect(staticPages(fixture)).toEqual(['/', '/about', '/boom', '/form', '/slow'])
  })

  it('joins nested paths, leaves out dynamic, optional and splat segments, and puts them under the basename', () => {
    const routes = {
      root: { path: '', module: page },
      home: { parentId: 'root', index: true, module: page },
      docs: { parentId: 'root', path: 'docs', module: page },
      'docs-index': { parentId: 'docs', index: true, module: page },
      intro: { parentId: 'docs', path: 'intro/', module: page },
      post: { parentId: 'root', path: 'posts/:id', module: page },
      lang: { parentId: 'root', path: ':lang?/help', module: page },
      files: { parentId: 'root', path: 'files/*', module: page },
      feed: { parentId: 'root', path: 'feed.xml', module: resource },
      pathless: { parentId: 'root', module: page },
      team: { parentId: 'pathless', path: 'team', module: page },
    }
    expect(staticPages(build(routes))).toEqual(['/', '/docs', '/docs/intro', '/team'])
    expect(staticPages(build(routes, '/app/'))).toEqual(['/app', '/app/docs', '/app/docs/intro', '/app/team'])
  })
})
