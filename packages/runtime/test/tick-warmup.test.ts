import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const moduleUrl = new URL('../dist/tick-warmup.js', import.meta.url).href

// Run in a process of its own: the test runner's own scheduling would mix with the calls counted.
const script = `
const { warmTickQueue } = await import(${JSON.stringify(moduleUrl)})
const original = process.nextTick
const calls = []
let turn = 0
const onTurn = () => { turn++; if (turn < 100000) setImmediate(onTurn) }
setImmediate(onTurn)
process.nextTick = function (callback, ...args) {
  const kind = callback.name.startsWith('bound ') ? 'bound' : Object.hasOwn(callback, 'prototype') ? 'plain' : 'arrow'
  calls.push({ args: args.length, kind, turn })
  return original.call(process, callback, ...args)
}
await warmTickQueue(50)
process.nextTick = original
turn = 100000
console.log(JSON.stringify(calls))
`

describe('warmTickQueue', () => {
  it('calls nextTick with every argument count and several callback kinds, a few per turn of the loop', async () => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('.', import.meta.url)) })
    const calls = JSON.parse(stdout) as Array<{ args: number, kind: string, turn: number }>
    expect(calls).toHaveLength(200)
    expect(new Set(calls.map((c) => c.args))).toEqual(new Set([0, 1, 2, 3]))
    expect(new Set(calls.map((c) => c.kind))).toEqual(new Set(['plain', 'arrow', 'bound']))
    // Spread over the loop's turns: no tick object lives long (a long queue of them would be
    // moved to the old generation, which costs more than the warm-up saves).
    const perTurn = new Map<number, number>()
    for (const c of calls) perTurn.set(c.turn, (perTurn.get(c.turn) ?? 0) + 1)
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(8)
    expect(perTurn.size).toBeGreaterThanOrEqual(25)
  })
})
