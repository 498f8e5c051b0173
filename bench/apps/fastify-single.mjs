// Runs a Fastify app module (default export a plugin, optional `options` export) in one
// process: the single-process baseline, and what node:cluster and PM2 fork.
import Fastify from 'fastify'

const appPath = process.argv[2]
const port = Number(process.env.PORT ?? process.argv[3] ?? 3000)
const mod = await import(appPath)
const app = Fastify(mod.options ?? {})
await app.register(mod.default)
await app.listen({ host: process.env.HOST ?? '127.0.0.1', port })
process.on('SIGTERM', () => { app.close().then(() => process.exit(0)) })
process.on('SIGINT', () => { app.close().then(() => process.exit(0)) })
