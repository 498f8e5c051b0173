import type { ReactNode } from 'react'
import Link from 'next/link'

export const metadata = { title: '{{name}}' }

export default function RootLayout ({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body style={{ fontFamily: 'system-ui, sans-serif', margin: '2rem' }}>
        <nav style={{ display: 'flex', gap: '1rem' }}>
          <Link href="/">Home</Link>
          <Link href="/cached">Cached</Link>
        </nav>
        <main>{children}</main>
      </body>
    </html>
  )
}
