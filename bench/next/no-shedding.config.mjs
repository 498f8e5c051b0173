// spindle start for the Next.js example with load shedding off, to measure raw capacity
// under a closed loop of 100 connections (shedding answers most of them 503 otherwise).
export default { app: new URL('../../examples/next/app.js', import.meta.url).pathname, shedding: false }
