import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { COALESCE_BYTES, coalescedBody } from '../src/coalesced-body.ts'

const bytes = (n: number, fill = 97): Uint8Array => new Uint8Array(n).fill(fill)

/** Reads a Node stream to its end, with the time of each chunk. */
async function chunksOf (stream: AsyncIterable<Buffer>): Promise<Array<{ size: number, at: number }>> {
  const t0 = performance.now()
  const out: Array<{ size: number, at: number }> = []
  for await (const chunk of stream) out.push({ size: chunk.length, at: performance.now() - t0 })
  return out
}

describe('coalescedBody', () => {
  it('joins the pieces of one turn into one chunk, and sends a later piece on its own as soon as its turn ends', async () => {
    const body = new ReadableStream<Uint8Array>({
      async start (controller) {
        // A shell rendered in one turn, in pieces of a few KB as React sends it...
        for (let i = 0; i < 12; i++) controller.enqueue(bytes(3000))
        // ...and a Suspense part 100 ms later.
        await sleep(100)
        controller.enqueue(bytes(500, 98))
        controller.enqueue(bytes(700, 98))
        await sleep(100)
        controller.close()
      },
    })
    const chunks = await chunksOf(coalescedBody(body))
    expect(chunks.map((c) => c.size)).toEqual([36_000, 1200])
    // Each left at the end of its own turn, not at the end of the stream.
    expect(chunks[0]!.at).toBeLessThan(50)
    expect(chunks[1]!.at).toBeGreaterThanOrEqual(90)
    expect(chunks[1]!.at).toBeLessThan(190)
  })

  it('splits a body that outgrows COALESCE_BYTES within one turn, and keeps every byte in order', async () => {
    const pieces = Array.from({ length: 50 }, (_, i) => bytes(4096, i))
    const body = new ReadableStream<Uint8Array>({ start (c) { for (const p of pieces) c.enqueue(p); c.close() } })
    const out: Buffer[] = []
    for await (const chunk of coalescedBody(body)) out.push(chunk as Buffer)
    expect(out.length).toBeGreaterThan(1)
    for (const chunk of out.slice(0, -1)) expect(chunk.length).toBeGreaterThanOrEqual(COALESCE_BYTES)
    expect(Buffer.concat(out).equals(Buffer.concat(pieces))).toBe(true)
  })

  it('cancels the Web stream when the Node stream is destroyed (the client went away)', async () => {
    let reason: unknown = 'not cancelled'
    const body = new ReadableStream<Uint8Array>({
      start (c) { c.enqueue(bytes(10)) },
      cancel (why) { reason = why },
    })
    const stream = coalescedBody(body)
    const errors: Error[] = []
    stream.on('error', (err) => errors.push(err))
    stream.resume()
    await sleep(20)
    stream.destroy(new Error('client gone'))
    await sleep(20)
    expect(reason).toBeInstanceOf(Error)
    expect((reason as Error).message).toBe('client gone')
    expect(errors.map((e) => e.message)).toEqual(['client gone'])
  })

  it('stops pulling from the Web stream while its reader does not read (back-pressure)', async () => {
    let pulls = 0
    const body = new ReadableStream<Uint8Array>({
      pull (c) { pulls++; c.enqueue(bytes(COALESCE_BYTES)) },
    }, { highWaterMark: 0 })
    const stream = coalescedBody(body)
    stream.once('readable', () => {})
    await sleep(100)
    // Node's buffer (16 KB high-water mark) holds a chunk or two, then the pump waits.
    expect(pulls).toBeLessThan(5)
    const before = pulls
    await sleep(100)
    expect(pulls).toBe(before)
    stream.destroy()
  })

  it('passes an error of the Web stream on to the Node stream', async () => {
    const body = new ReadableStream<Uint8Array>({
      start (c) { c.enqueue(bytes(10)); setTimeout(() => c.error(new Error('render failed')), 10) },
    })
    await expect(chunksOf(coalescedBody(body))).rejects.toThrow('render failed')
  })
})
