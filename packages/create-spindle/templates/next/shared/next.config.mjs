import { withSpindle } from '@spindle/next'

// withSpindle puts Next's caches (ISR, fetch, 'use cache') in Spindle's shared memory,
// so every worker thread sees one cache and one revalidateTag.
/** @type {import('next').NextConfig} */
export default withSpindle({
  poweredByHeader: false,
  // next build also writes .next/standalone, the small tree the Docker image ships.
  output: 'standalone',
  // 'use cache' (app/cached/page).
  cacheComponents: true,
  partialPrefetching: true,
  // Next's dev server only accepts HMR connections from these hosts.
  allowedDevOrigins: ['127.0.0.1'],
})
