import { describe, expect, it } from 'vitest'
import { createSharedStore } from '@spindle/cache'

const value = Buffer.from('v')
// The store's clock has microsecond steps: a purge in the same microsecond as a set may miss it.
const nextMs = (): void => { const t = Date.now(); while (Date.now() <= t) { /* wait for the clock */ } }

describe('the tag table makes room', () => {
  it('many distinct tags over time neither wipe unrelated entries nor bring back purged ones', () => {
    const store = createSharedStore({ maxBytes: 1024 * 1024, maxTags: 32 })
    store.set('purged', value, { tags: ['p'] })
    nextMs()
    store.invalidateTags(['p'])
    for (let i = 0; i < 300; i++) {
      // Pages come and go, each with its own tag, purged once.
      store.set(`page-${i}`, value, { tags: [`t${i}`] })
      nextMs()
      store.invalidateTags([`t${i}`])
      expect(store.get(`page-${i}`), `page-${i}`).toBeUndefined()
    }
    expect(store.get('purged')).toBeUndefined()
    // A purge of one tag leaves entries that do not carry it alone, however many tags came before.
    store.set('kept', value, { tags: ['k'] })
    nextMs()
    store.invalidateTags(['unrelated'])
    expect(store.get('kept')?.value.toString()).toBe('v')
    store.invalidateTags(['k'])
    expect(store.get('kept')).toBeUndefined()
    // A tag no longer held answers a time no earlier than its own.
    expect(store.tagsRevalidatedAt(['t5'])).toBeGreaterThan(0)
  })
})
