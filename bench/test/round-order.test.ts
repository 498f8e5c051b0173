import { describe, expect, it } from 'vitest'
// @ts-expect-error: a plain ES module of the benchmarks, without types
import { roundOrder } from '../lib/round-order.mjs'

describe('the order of a benchmark round', () => {
  it('runs the configurations as given in odd rounds and reversed in even ones, so each holds every place equally often over two rounds', () => {
    const configs = ['single', 'spindle', 'cluster', 'pm2']
    expect(roundOrder(configs, 1)).toEqual(['single', 'spindle', 'cluster', 'pm2'])
    expect(roundOrder(configs, 2)).toEqual(['pm2', 'cluster', 'spindle', 'single'])
    expect(roundOrder(configs, 3)).toEqual(configs)
    // The caller's list is left as it was.
    expect(configs).toEqual(['single', 'spindle', 'cluster', 'pm2'])
    const places = new Map<string, number>()
    for (const round of [1, 2]) roundOrder(configs, round).forEach((c: string, i: number) => places.set(c, (places.get(c) ?? 0) + i))
    expect(new Set(places.values())).toEqual(new Set([configs.length - 1]))
  })
})
