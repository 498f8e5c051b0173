// A render pool thread: imports the build once, then serves each task (one request) through
// React Router's Web handler.
import { pathToFileURL } from 'node:url'
import { createRequestHandler, type ServerBuild } from 'react-router'
import { poolTask, serveWebTask, signalReady, threadOptions } from '@spindle/runtime/pool-thread'
import { SPINDLE_REACT_ROUTER_BUILD_INVALID } from './errors.ts'

const { build: path, mode } = threadOptions<{ build: string, mode: 'production' | 'development' }>()
const build = await import(pathToFileURL(path).href) as ServerBuild
if (!build || typeof build !== 'object' || !build.routes || !build.entry) {
  throw new SPINDLE_REACT_ROUTER_BUILD_INVALID(path, 'expected the module react-router build writes to build/server/index.js')
}
const handle = createRequestHandler(build, mode)
signalReady()

export default poolTask((task) => serveWebTask(task, (request) => handle(request)))
