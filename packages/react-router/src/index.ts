export { reactRouterAdapter } from './react-router-adapter.ts'
export type { ReactRouterAdapterOptions, BuildAdapterOptions, DevAdapterOptions, BuildOption } from './options.ts'
export { SPINDLE_REACT_ROUTER_BUILD_INVALID, SPINDLE_REACT_ROUTER_BUILD_NOT_FOUND, SPINDLE_REACT_ROUTER_INVALID_OPTION, SPINDLE_REACT_ROUTER_VITE_FAILED } from './errors.ts'
