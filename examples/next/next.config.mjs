import { withSpindle } from '@spindle/next'

/** @type {import('next').NextConfig} */
export default withSpindle({
  poweredByHeader: false,
  // 'use cache' (the /cached page) without turning on Cache Components for the other pages.
  experimental: { useCache: true },
})
