import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { SPINDLE_RUNTIME_CONFIG_LOAD_FAILED } from './errors.ts'
import type { ServeOptions } from './options.ts'

/** What a spindle.config.* file exports: serve() options, with `app` optional (default ./app.js). */
export type SpindleConfig = Omit<ServeOptions, 'app'> & { app?: string }

/** Identity helper that types a spindle.config.* file. */
export function defineConfig (config: SpindleConfig): SpindleConfig {
  return config
}

export const CONFIG_FILES = ['spindle.config.ts', 'spindle.config.mts', 'spindle.config.js', 'spindle.config.mjs'] as const

export function findConfigFile (dir: string): string | undefined {
  for (const name of CONFIG_FILES) {
    const file = resolve(dir, name)
    if (existsSync(file)) return file
  }
  return undefined
}

/** Imports a config file; relative paths in it (app, cwd) are resolved from its directory. */
export async function loadConfigFile (file: string): Promise<SpindleConfig> {
  let mod: { default?: unknown }
  try {
    mod = await import(pathToFileURL(file).href) as { default?: unknown }
  } catch (err) {
    throw new SPINDLE_RUNTIME_CONFIG_LOAD_FAILED(file, (err as Error).message, { cause: err })
  }
  const config = mod.default
  if (typeof config !== 'object' || config === null) {
    throw new SPINDLE_RUNTIME_CONFIG_LOAD_FAILED(file, 'its default export must be an object (use defineConfig)')
  }
  const out = { ...(config as SpindleConfig) }
  const dir = dirname(file)
  if (typeof out.app === 'string') out.app = resolve(dir, out.app)
  out.cwd = out.cwd ? resolve(dir, out.cwd) : dir
  return out
}
