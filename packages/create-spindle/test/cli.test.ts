import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// The create-spindle command as a user runs it, with no terminal (so no questions) and
// --no-install, so these run in well under a second each.

const cli = fileURLToPath(new URL('../bin/create-spindle.js', import.meta.url))
let cwd: string

beforeAll(() => { cwd = mkdtempSync(join(tmpdir(), 'create-spindle-cli-')) })
afterAll(() => { rmSync(cwd, { recursive: true, force: true }) })

function createSpindle (args: string[], env: NodeJS.ProcessEnv = {}, dir = cwd): Promise<{ code: number, output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { cwd: dir, env: { ...process.env, CI: 'true', SPINDLE_CREATE_PACKAGES: '', ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code) : 0, output: stdout + stderr })
    })
  })
}

describe('create-spindle errors', () => {
  it('refuses an unknown template, naming the known ones, and writes nothing', async () => {
    const { code, output } = await createSpindle(['app-1', '--template', 'remix', '--no-install'])
    expect(code).toBe(1)
    expect(output).toContain('SPINDLE_CREATE_UNKNOWN_TEMPLATE: Unknown template "remix": choose one of next, react-router, fastify')
    expect(() => readFileSync(join(cwd, 'app-1', 'package.json'))).toThrow()
  })

  it('refuses a folder whose name is not a valid package name', async () => {
    const { code, output } = await createSpindle(['My App', '--template', 'fastify', '--no-install'])
    expect(code).toBe(1)
    expect(output).toMatch(/SPINDLE_CREATE_INVALID_NAME: The project name "My App" is not a valid npm package name: .*capital letters/)
  })

  it('refuses a folder that is not empty, and leaves it as it was', async () => {
    mkdirSync(join(cwd, 'taken'))
    writeFileSync(join(cwd, 'taken', 'notes.txt'), 'mine')
    const { code, output } = await createSpindle(['taken', '--template', 'fastify', '--no-install'])
    expect(code).toBe(1)
    expect(output).toContain(`SPINDLE_CREATE_DIR_NOT_EMPTY: The folder ${join(cwd, 'taken')} is not empty`)
    expect(readFileSync(join(cwd, 'taken', 'notes.txt'), 'utf8')).toBe('mine')
  })

  it('accepts a folder holding only .git', async () => {
    mkdirSync(join(cwd, 'fresh', '.git'), { recursive: true })
    const { code } = await createSpindle(['fresh', '--template', 'fastify', '--no-install'])
    expect(code).toBe(0)
    expect(JSON.parse(readFileSync(join(cwd, 'fresh', 'package.json'), 'utf8')).name).toBe('fresh')
  })

  it('refuses a folder under a file (ENOTDIR) with a coded error naming the path, not a stack trace', async () => {
    writeFileSync(join(cwd, 'afile'), 'mine')
    const { code, output } = await createSpindle(['afile/sub', '--template', 'fastify', '--no-install'])
    expect(code).toBe(1)
    expect(output).toContain(`SPINDLE_CREATE_WRITE_FAILED: Cannot write the project to ${join(cwd, 'afile', 'sub')} (ENOTDIR`)
    expect(output).toContain('nothing was written')
    expect(output).not.toMatch(/^\s+at /m)
    expect(readFileSync(join(cwd, 'afile'), 'utf8')).toBe('mine')
  })

  it('refuses a symbolic link to nothing (ENOENT) and leaves the link as it was', async () => {
    symlinkSync('nowhere', join(cwd, 'dangling'))
    const { code, output } = await createSpindle(['dangling', '--template', 'fastify', '--no-install'])
    expect(code).toBe(1)
    expect(output).toContain(`SPINDLE_CREATE_WRITE_FAILED: Cannot write the project to ${join(cwd, 'dangling')} (ENOENT: a symbolic link to nowhere`)
    expect(output).not.toMatch(/^\s+at /m)
    expect(lstatSync(join(cwd, 'dangling')).isSymbolicLink()).toBe(true)
    expect(existsSync(join(cwd, 'nowhere'))).toBe(false)
  })

  it('removes what it wrote when a write fails halfway (ENAMETOOLONG)', async () => {
    // A folder so deep that the project's shortest paths fit in PATH_MAX (4096 on Linux,
    // with the final NUL) and its longest do not, however it stages the files.
    const files = ['common', 'next/shared', 'next/ts'].flatMap((part) => {
      const from = fileURLToPath(new URL(`../templates/${part}/`, import.meta.url))
      return readdirSync(from, { recursive: true, encoding: 'utf8' })
    })
    const longest = Math.max(...files.map((f) => f.length))
    let deep = mkdtempSync(join(tmpdir(), 'create-spindle-deep-'))
    const top = deep
    const length = 4095 - '/app/'.length - longest + 3
    while (deep.length < length - 1) deep = join(deep, 'd'.repeat(Math.min(200, length - deep.length - 1)))
    mkdirSync(deep, { recursive: true })
    const { code, output } = await createSpindle(['app', '--template', 'next', '--typescript', '--no-install'], {}, deep)
    expect(code).toBe(1)
    expect(output).toContain(`SPINDLE_CREATE_WRITE_FAILED: Cannot write the project to ${join(deep, 'app')} (ENAMETOOLONG`)
    expect(output).toContain('what was written is removed')
    expect(output).not.toMatch(/^\s+at /m)
    expect(readdirSync(deep)).toEqual([])
    rmSync(top, { recursive: true })
  })

  it('exits 2 on an unknown flag', async () => {
    const { code, output } = await createSpindle(['x', '--templat', 'next'])
    expect(code).toBe(2)
    expect(output).toContain('SPINDLE_CREATE_USAGE')
  })

  it('names the missing tarball when the packages folder lacks one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'create-spindle-pk-'))
    writeFileSync(join(dir, 'spindle-runtime-0.1.0.tgz'), '')
    const { code, output } = await createSpindle(['app-2', '--template', 'next', '--no-install'], { SPINDLE_CREATE_PACKAGES: dir })
    expect(code).toBe(1)
    expect(output).toContain(`SPINDLE_CREATE_PACKAGES_NOT_FOUND: No tarball for @spindle/cache in ${dir}`)
    rmSync(dir, { recursive: true })
  })

  it('prints its help with every flag', async () => {
    const { code, output } = await createSpindle(['--help'])
    expect(code).toBe(0)
    for (const flag of ['--template', '--typescript', '--js', '--package-manager', '--no-install', '--yes', '--packages-from', 'SPINDLE_CREATE_PACKAGES']) {
      expect(output).toContain(flag)
    }
  })
})

describe('create-spindle --no-install', () => {
  it('writes the project, then the next steps with the install command first', async () => {
    const { code, output } = await createSpindle(['steps', '--template', 'react-router', '--package-manager', 'pnpm', '--no-install'])
    expect(code).toBe(0)
    expect(output).toMatch(/cd steps[\s\S]*pnpm install[\s\S]*pnpm dev[\s\S]*pnpm build[\s\S]*pnpm start/)
    expect(output).toContain('docker build -t steps .')
  })
})
