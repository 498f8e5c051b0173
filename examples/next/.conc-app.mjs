import { nextAdapter } from '@spindle/next'
export const options = { logger: false }
export default async function app (fastify) {
  await fastify.register(nextAdapter, { dir: '/work/wt/pooladm/examples/next', threadConcurrency: Number(process.env.CONC ?? 4) })
}
