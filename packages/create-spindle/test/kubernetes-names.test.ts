import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnCreateSpindle } from './helpers/cli.ts'

// Every name a generated project gives Kubernetes, checked against Kubernetes' own rules
// (k8s.io/apimachinery/pkg/util/validation), for npm names that are none of them.

// IsDNS1123Subdomain: Deployment, Secret, HorizontalPodAutoscaler and NetworkPolicy names.
function isDns1123Subdomain (value: string): boolean {
  return value.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(value)
}
// IsDNS1035Label: Service names.
function isDns1035Label (value: string): boolean {
  return value.length <= 63 && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(value)
}
// IsValidLabelValue: label values and selectors.
function isLabelValue (value: string): boolean {
  return value.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value)
}
// A Docker image name without registry: path components of the reference grammar
// (github.com/distribution/reference), then an optional tag.
function isImageName (value: string): boolean {
  const component = '[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*'
  return new RegExp(`^${component}(?:/${component})*(?::[\\w][\\w.-]{0,127})?$`).test(value)
}

let cwd: string
beforeAll(() => { cwd = mkdtempSync(join(tmpdir(), 'create-spindle-k8s-')) })
afterAll(() => { rmSync(cwd, { recursive: true, force: true }) })

const all = (text: string, pattern: RegExp): string[] => [...text.matchAll(pattern)].map((m) => m[1]!)

describe('the names a project gives Kubernetes and Docker', () => {
  it.each([
    ['my_app', 'next', 'my-app'],
    ['1app', 'next', 'app'],
    ['my.app', 'next', 'my-app'],
    ['123', 'next', 'app'],
    [`${'a'.repeat(62)}-b`, 'next', 'a'.repeat(62)],
    ['@scope/my-app', 'next', 'my-app'],
    ['my_app', 'react-router', 'my-app'],
    ['my_app', 'fastify', 'my-app'],
  ])('%s (%s) is %s, valid everywhere', async (dir, template, expected) => {
    const parent = mkdtempSync(join(cwd, 'run-'))
    const { code, output } = await spawnCreateSpindle([dir, '--template', template, '--no-install'], parent).exited
    expect(code, output).toBe(0)
    const root = join(parent, dir)
    const read = (file: string): string => readFileSync(join(root, file), 'utf8')
    const npmName = dir.split('/').at(-1)!
    expect(JSON.parse(read('package.json')).name).toBe(npmName)

    const names: string[] = []
    for (const file of ['deployment', 'service', 'hpa', 'networkpolicy']) {
      const yaml = read(`k8s/${file}.yaml`)
      const kind = /^kind: (\w+)$/m.exec(yaml)![1]!
      const name = /^metadata:\n\s+name: (\S+)$/m.exec(yaml)![1]!
      expect(kind === 'Service' ? isDns1035Label(name) : isDns1123Subdomain(name), `${kind} name ${name}`).toBe(true)
      names.push(name)
      const labels = all(yaml, /\bapp: ([^\s,}]+)/g)
      for (const label of labels) expect(isLabelValue(label), `${file}: app=${label}`).toBe(true)
      names.push(...labels)
      // The Secret the Deployment reads and the Deployment the autoscaler scales.
      for (const ref of all(yaml, /(?:secretRef|scaleTargetRef): \{[^}]*\bname: ([^\s,}]+)/g)) {
        expect(isDns1123Subdomain(ref), `${file}: ${ref}`).toBe(true)
        names.push(ref)
      }
      for (const image of all(yaml, /\bimage: (\S+)/g)) {
        expect(isImageName(image), `image ${image}`).toBe(true)
        names.push(image.replace(/:latest$/, ''))
      }
    }

    const readme = read('README.md')
    const secrets = all(readme, /kubectl create secret generic (\S+)/g)
    expect(secrets.length).toBe(template === 'fastify' ? 0 : 1)
    for (const secret of secrets) expect(isDns1123Subdomain(secret), `Secret ${secret}`).toBe(true)
    // The next steps are in a box that wraps long lines.
    const nextSteps = output.replace(/\s*│\s*/g, ' ')
    const images = [...all(readme, /docker build -t (\S+) \./g), ...all(readme, /^docker run .* (\S+)$/gm), ...all(nextSteps, /docker build -t\s+(\S+)\s+\./g)]
    expect(images).toHaveLength(3)
    for (const image of images) expect(isImageName(image), `image ${image}`).toBe(true)

    // One name throughout, so the Service selects the pods, the Deployment reads the
    // Secret the README creates and runs the image it builds.
    expect(new Set([...names, ...secrets, ...images])).toEqual(new Set([expected]))
  }, 30_000)
})
