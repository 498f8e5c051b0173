// A single Fastify process running the same app module, the baseline every ratio uses.
import Fastify from 'fastify'

const [appPath, port] = process.argv.slice(2)
const mod = await import(appPath)
const app = Fastify(mod.options ?? {})
await app.register(mod.default)
await app.listen({ host: '127.0.0.1', port: Number(port) })
process.stdout.write('listening\n')
process.on('SIGTERM', () => app.close().then(() => process.exit(0)))
