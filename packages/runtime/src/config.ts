import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { SPINDLE_RUNTIME_CONFIG_LOAD_FAILED } from './errors.ts'
import type { ServeOptions } from './options.ts'

/** What a spindle.config.* file exports: serve() options, with `app` optional (default ./app.js). */
export type SpindleConfig = Omit<ServeOptions, 'app'> & { app?: string }

/** Identity helper that types a spindle.config.* file: its options, or a promise of them. */
export function defineConfig (config: SpindleConfig): SpindleConfig
export function defineConfig (config: Promise<SpindleConfig>): Promise<SpindleConfig>
export function defineConfig (config: SpindleConfig | Promise<SpindleConfig>): SpindleConfig | Promise<SpindleConfig> {
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

/**
 * Imports a config file; relative paths in it (app, cwd) are resolved from its directory. Its
 * default export may be a promise of the options, for a config that reads something first.
 */
export async function loadConfigFile (file: string): Promise<SpindleConfig> {
  let config: unknown
  try {
    const mod = await import(pathToFileURL(file).href) as { default?: unknown }
    config = await mod.default
  } catch (err) {
    throw new SPINDLE_RUNTIME_CONFIG_LOAD_FAILED(file, (err as Error).message, { cause: err })
  }
  if (typeof config !== 'object' || config === null) {
    throw new SPINDLE_RUNTIME_CONFIG_LOAD_FAILED(file, 'its default export must be an object, or a promise of one (use defineConfig)')
  }
  const out = { ...(config as SpindleConfig) }
  const dir = dirname(file)
  if (typeof out.app === 'string') out.app = resolve(dir, out.app)
  out.cwd = out.cwd ? resolve(dir, out.cwd) : dir
  return out
}
