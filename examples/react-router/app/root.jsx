import { Link, Links, Meta, Outlet, Scripts, ScrollRestoration } from 'react-router'

export function Layout ({ children }) {
  return (
    <html lang="en">
      <head><meta charSet="utf-8" /><title>Spindle + React Router</title><Meta /><Links /></head>
      <body style={{ fontFamily: 'system-ui, sans-serif', margin: '2rem' }}>
        <nav style={{ display: 'flex', gap: '1rem' }}><Link to="/">Catalogue</Link><Link to="/products/7">Product 7</Link></nav>
        {children}
        <ScrollRestoration />
        <Scripts />
      </body>
    </html>
  )
}

export default function Root () {
  return <Outlet />
}
