import { relative } from 'node:path'
import { kubernetesName } from './kubernetes-name.ts'
import { commandsFor } from './package-manager.ts'
import type { Choices } from './choices.ts'

/** The message that closes a run: how to develop, build, start and deploy the new app. */
export function nextSteps (root: string, cwd: string, name: string, choices: Choices): string {
  const { run, install } = commandsFor(choices.packageManager)
  const dir = relative(cwd, root)
  return [
    ...(dir === '' ? [] : [`cd ${dir.includes(' ') ? JSON.stringify(dir) : dir}`]),
    ...(choices.install ? [] : [install]),
    `${run} dev     # develop`,
    `${run} build   # production build`,
    `${run} start   # every core; health on 127.0.0.1:9091`,
    '',
    // The image k8s/deployment.yaml runs.
    `docker build -t ${kubernetesName(name)} .   # then k8s/ for Kubernetes`,
  ].join('\n')
}
