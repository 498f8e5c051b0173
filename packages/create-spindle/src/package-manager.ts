import type { PackageManager } from './args.ts'

/** The commands a project's README, Dockerfile and next-steps message use for one package manager. */
export interface PackageManagerCommands {
  readonly pm: PackageManager
  readonly install: string
  /** `npm run` / `pnpm`, followed by a script name. */
  readonly run: string
  readonly lockfile: string
  /** Installs exactly the lockfile, in a Docker build. */
  readonly ciInstall: string
  /** Drops devDependencies after the build. */
  readonly pruneDev: string
}

export function commandsFor (pm: PackageManager): PackageManagerCommands {
  if (pm === 'pnpm') {
    return {
      pm,
      install: 'pnpm install',
      run: 'pnpm',
      lockfile: 'pnpm-lock.yaml',
      ciInstall: 'npm install --global pnpm@10 && pnpm install --frozen-lockfile',
      pruneDev: 'pnpm prune --prod',
    }
  }
  return { pm, install: 'npm install', run: 'npm run', lockfile: 'package-lock.json', ciInstall: 'npm ci', pruneDev: 'npm prune --omit=dev' }
}
