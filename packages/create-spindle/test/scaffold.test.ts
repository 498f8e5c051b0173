import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { manifest, tarballSpecs, templates, type Template } from '../src/index.ts'
import { scaffold } from '../src/scaffold.ts'

let root: string
beforeAll(() => { root = mkdtempSync(join(tmpdir(), 'create-spindle-scaffold-')) })
afterAll(() => { rmSync(root, { recursive: true, force: true }) })

const workspaceYaml = readFileSync(new URL('../../../pnpm-workspace.yaml', import.meta.url), 'utf8')
const catalog = new Map([...workspaceYaml.matchAll(/^ {2}'?([^':\s]+)'?: (\S+)$/gm)].map((m) => [m[1]!, m[2]!]))

function read (dir: string, file: string): string {
  return readFileSync(join(dir, file), 'utf8')
}

describe.each(templates.map((t) => [t.id, t] as [string, Template]))('the %s template', (_, template) => {
  it('asks for the versions the workspace is tested with', () => {
    const all = { ...template.dependencies, ...template.devDependencies, ...template.typescriptDevDependencies }
    for (const [name, range] of Object.entries(all)) {
      if (catalog.has(name)) expect(`${name}@${range}`).toBe(`${name}@${catalog.get(name)}`)
    }
  })

  it.each([true, false])('writes a complete project (typescript: %s) with every placeholder filled', async (typescript) => {
    const dir = join(root, `${template.id}-${typescript ? 'ts' : 'js'}`)
    const files = await scaffold(dir, { name: 'shop', template, typescript, packageManager: 'npm', spindleRange: '^0.1.0', tarballs: new Map() })
    const ext = typescript ? 'ts' : 'js'
    for (const file of ['package.json', 'README.md', 'Dockerfile', '.dockerignore', '.gitignore', `app.${ext}`, `spindle.config.${ext}`,
      'k8s/deployment.yaml', 'k8s/service.yaml', 'k8s/hpa.yaml', 'k8s/networkpolicy.yaml']) {
      expect(files).toContain(file)
    }
    expect(existsSync(join(dir, typescript ? 'app.js' : 'app.ts'))).toBe(false)
    expect(files.some((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts'))).toBe(typescript)
    for (const file of files) expect(read(dir, file), file).not.toMatch(/\{\{\w+\}\}/)
    // A JavaScript project's code names its own files, not the TypeScript template's.
    if (!typescript) for (const file of files.filter((f) => /\.jsx?$/.test(f))) expect(read(dir, file), file).not.toMatch(/\bapp\.ts\b/)

    const pkg = JSON.parse(read(dir, 'package.json'))
    expect(pkg).toMatchObject({ name: 'shop', private: true, type: 'module', scripts: { start: 'spindle start' } })
    expect(Object.keys(pkg.scripts)).toEqual(expect.arrayContaining(['dev', 'build', 'start']))
    for (const spindle of template.spindle) expect(pkg.dependencies[spindle]).toBe('^0.1.0')
    expect(pkg.devDependencies?.typescript !== undefined).toBe(typescript)

    const deployment = read(dir, 'k8s/deployment.yaml')
    expect(deployment).toContain('name: shop')
    expect(deployment).toMatch(/livenessProbe:\s+httpGet: \{ path: \/healthz, port: 9091 \}/)
    expect(deployment).toMatch(/readinessProbe:\s+httpGet: \{ path: \/readyz, port: 9091 \}/)
    expect(deployment).toContain('resourceFieldRef: { resource: limits.cpu')
    expect(deployment).toContain('{ name: SPINDLE_CONTROL_HOST, value: "$(POD_IP)" }')
    expect(deployment).toMatch(/preStop: \{ sleep: \{ seconds: 5 \} \}/)
    expect(deployment).toContain('terminationGracePeriodSeconds: 30')
    const dockerfile = read(dir, 'Dockerfile')
    expect(dockerfile).toContain('COPY package.json package-lock.json ./')
    expect(dockerfile).toMatch(/^USER node$/m)
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*9091.*\/healthz/m)
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2)
  })
})

describe('package.json for tarballs', () => {
  it('points the Spindle packages and their own dependencies at the tarballs, for each package manager', () => {
    const dir = mkdtempSync(join(tmpdir(), 'create-spindle-pk-'))
    for (const file of ['spindle-runtime-0.1.0.tgz', 'spindle-cache-0.1.0.tgz', 'spindle-next-0.1.0.tgz', 'spindle-react-router-0.1.0.tgz', 'notes.txt']) {
      writeFileSync(join(dir, file), '')
    }
    const next = templates.find((t) => t.id === 'next')!
    const tarballs = tarballSpecs(dir, next.spindle, ['@spindle/runtime', '@spindle/cache', '@spindle/next', '@spindle/react-router'])
    expect(tarballs.get('@spindle/react-router')).toBe(`file:${join(dir, 'spindle-react-router-0.1.0.tgz')}`)
    expect(tarballs.get('@spindle/runtime')).toBe(`file:${join(dir, 'spindle-runtime-0.1.0.tgz')}`)
    const input = { name: 'x', template: next, typescript: true, spindleRange: '^0.1.0', tarballs }
    const npm = manifest({ ...input, packageManager: 'npm' }) as { dependencies: Record<string, string>, overrides: Record<string, string> }
    expect(npm.dependencies['@spindle/next']).toBe(`file:${join(dir, 'spindle-next-0.1.0.tgz')}`)
    expect(npm.overrides['@spindle/cache']).toBe(`file:${join(dir, 'spindle-cache-0.1.0.tgz')}`)
    const pnpm = manifest({ ...input, packageManager: 'pnpm' }) as { pnpm: { overrides: Record<string, string> } }
    expect(pnpm.pnpm.overrides['@spindle/cache']).toBe(`file:${join(dir, 'spindle-cache-0.1.0.tgz')}`)
    expect(readdirSync(dir)).toHaveLength(5)
    rmSync(dir, { recursive: true })
  })
})
