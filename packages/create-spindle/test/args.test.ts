import { describe, expect, it } from 'vitest'
import { detectPackageManager, parseArgs } from '../src/index.ts'

describe('parseArgs', () => {
  it('leaves every question open when no flag answers it', () => {
    expect(parseArgs([])).toEqual({
      dir: undefined, template: undefined, typescript: undefined, packageManager: undefined,
      install: undefined, yes: false, packagesFrom: undefined, help: false, version: false,
    })
  })

  it('reads a flag for every question', () => {
    expect(parseArgs(['my-app', '--template', 'react-router', '--js', '--package-manager', 'pnpm', '--no-install', '--yes'])).toMatchObject({
      dir: 'my-app', template: 'react-router', typescript: false, packageManager: 'pnpm', install: false, yes: true,
    })
    expect(parseArgs(['-t', 'fastify', '--typescript', '--install', '-y'])).toMatchObject({ template: 'fastify', typescript: true, install: true, yes: true })
    expect(parseArgs(['--ts']).typescript).toBe(true)
    expect(parseArgs(['--no-typescript']).typescript).toBe(false)
    expect(parseArgs(['--template=next']).template).toBe('next')
  })

  it('takes the tarball folder from --packages-from, else from SPINDLE_CREATE_PACKAGES', () => {
    expect(parseArgs([], { SPINDLE_CREATE_PACKAGES: '/pk' }).packagesFrom).toBe('/pk')
    expect(parseArgs(['--packages-from', '/flag'], { SPINDLE_CREATE_PACKAGES: '/pk' }).packagesFrom).toBe('/flag')
    expect(parseArgs([], { SPINDLE_CREATE_PACKAGES: '' }).packagesFrom).toBeUndefined()
  })

  it('takes a flag said twice the same way, by any of its names', () => {
    expect(parseArgs(['-y', '--yes', '--install', '--install']).install).toBe(true)
  })

  it.each([
    [['--frobnicate'], /Unknown option '--frobnicate'/],
    [['--package-manager', 'yarn'], /--package-manager must be one of npm, pnpm, got "yarn"/],
    [['--package-manager='], /--package-manager must be one of npm, pnpm, got ""/],
    [['--ts', '--js'], /--typescript and --js contradict each other/],
    [['a', 'b'], /Expected one folder name, got 2: a b/],
    [['--template'], /argument missing/],
    [['--template', ''], /--template needs a name/],
    [['--typescript', '--no-typescript'], /--typescript and --no-typescript contradict each other/],
    [['--no-install', '--install'], /--no-install and --install contradict each other/],
    [[''], /The folder name is empty/],
  ])('refuses %j with SPINDLE_CREATE_USAGE', (argv, message) => {
    expect(() => parseArgs(argv)).toThrow(expect.objectContaining({ code: 'SPINDLE_CREATE_USAGE', message: expect.stringMatching(message) }))
  })
})

describe('detectPackageManager', () => {
  it('answers the package manager that runs `create`', () => {
    expect(detectPackageManager('pnpm/10.34.9 npm/? node/v24.21.0 linux x64')).toBe('pnpm')
    expect(detectPackageManager('npm/11.6.0 node/v24.21.0 linux x64 workspaces/false')).toBe('npm')
    expect(detectPackageManager(undefined)).toBe('npm')
  })
})
