import { describe, expect, it } from 'vitest'
import { isValidHost } from '@spindle/runtime/pool'

describe('isValidHost: the Host check of the framework adapters', () => {
  it.each([
    'app.test', 'app.test:3000', 'App.Test:80', 'x:0', 'x:65535', '127.0.0.1', '[::1]', '[::1]:8080', 'a!b', 'app.test.',
  ])('takes %s', (host) => {
    expect(isValidHost(host)).toBe(true)
  })

  it.each([
    // Not RFC 3986 host[:port].
    'app.test/blog', 'x@app.test', '%', 'a b', '', 'x:', 'x:123456',
    // RFC 3986, but WHATWG URL refuses them: building the app's URL would throw.
    'x:99999', 'x:65536', '[:::::]', '[1.2.3.4]', '%00', 'a%2fb', 'a%20b', '1.2.3.256', '0x1ffffffff',
    // RFC 3986, but WHATWG URL reads another host: the app would not see the host the hooks saw.
    '0x7f.1', '127.1', 'a%41', '[0::1]',
    // A port with leading zeros, which a URL writes without them (and drops when it is the default).
    'x:080', 'x:00443',
  ])('refuses %j', (host) => {
    expect(isValidHost(host)).toBe(false)
  })
})
