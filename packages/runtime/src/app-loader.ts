import { existsSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import type { FastifyPluginAsync, FastifyPluginCallback, FastifyServerOptions } from 'fastify'
import { SPINDLE_RUNTIME_APP_INVALID, SPINDLE_RUNTIME_APP_NOT_FOUND } from './errors.ts'

export interface LoadedApp {
  plugin: FastifyPluginAsync | FastifyPluginCallback
  options: FastifyServerOptions
}

/**
 * Imports an app module the way fastify-cli does: the default export is a Fastify
 * plugin, an optional `options` export holds the Fastify server options.
 */
export async function loadApp (appPath: string): Promise<LoadedApp> {
  if (!existsSync(appPath)) throw new SPINDLE_RUNTIME_APP_NOT_FOUND(appPath)
  const mod = await import(pathToFileURL(appPath).href) as Record<string, unknown>
  let plugin = mod.default
  // A CommonJS module compiled from ESM puts its exports one level down.
  if (plugin && typeof plugin === 'object' && typeof (plugin as { default?: unknown }).default === 'function') {
    plugin = (plugin as { default: unknown }).default
  }
  if (typeof plugin !== 'function') {
    throw new SPINDLE_RUNTIME_APP_INVALID(appPath, `must export a Fastify plugin as its default export (got ${plugin === undefined ? 'no default export' : typeof plugin})`)
  }
  const options = (mod.options ?? (mod.default as { options?: unknown }).options ?? {}) as FastifyServerOptions
  if (typeof options !== 'object' || options === null) {
    throw new SPINDLE_RUNTIME_APP_INVALID(appPath, `must export its Fastify server options as an object in \`options\` (got ${typeof options})`)
  }
  return { plugin: plugin as FastifyPluginAsync, options }
}
