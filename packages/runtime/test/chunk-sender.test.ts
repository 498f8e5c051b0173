// The pool thread's response sender: a response whole before anything left is handed back
// as one message (the task's result); once something was posted, the rest follows on the port.
import { afterEach, describe, expect, it } from 'vitest'
import { MessageChannel, type MessagePort } from 'node:worker_threads'
import { ChunkSender } from '../src/pool/chunk-sender.ts'
import { CHUNK_BYTES, WINDOW, type FromThread } from '../src/pool/protocol.ts'

const ports: MessagePort[] = []
afterEach(() => { for (const p of ports.splice(0)) p.close() })

function channel (): { sender: ChunkSender, received: FromThread[] } {
  const { port1, port2 } = new MessageChannel()
  ports.push(port1, port2)
  const received: FromThread[] = []
  port2.on('message', (m: FromThread) => { received.push(m) })
  return { sender: new ChunkSender(port1), received }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))
const text = (b: ArrayBuffer | undefined) => Buffer.from(b ?? new ArrayBuffer(0)).toString()

describe('ChunkSender', () => {
  it('gives a response rendered in one turn back whole, head, bytes and end, and posts nothing', async () => {
    const { sender, received } = channel()
    sender.head({ status: 200, headers: [['content-type', 'text/plain']] })
    await sender.add(Buffer.from('hello '))
    await sender.add(Buffer.from('world'))
    const final = sender.final()
    expect(final?.message).toMatchObject({ t: 'head', head: { status: 200 }, end: true })
    expect(final?.transfer).toHaveLength(1)
    expect(text((final!.message as { b?: ArrayBuffer }).b)).toBe('hello world')
    await turn()
    await turn()
    expect(received).toEqual([])
  })

  it('gathers up to a window within the turn before the first message: a 100 KB page and its last bytes come back whole', async () => {
    const { sender, received } = channel()
    sender.head({ status: 200, headers: [] })
    await sender.add(new Uint8Array(100 * 1024).fill(97))
    await sender.add(Buffer.from('</html>'))
    const final = sender.final()
    expect(final?.message).toMatchObject({ t: 'head', end: true })
    expect((final!.message as { b: ArrayBuffer }).b.byteLength).toBe(100 * 1024 + 7)
    await turn()
    expect(received).toEqual([])
    // Past a window it leaves at once, and later bytes go by the chunk.
    const big = channel()
    big.sender.head({ status: 200, headers: [] })
    await big.sender.add(new Uint8Array(WINDOW * CHUNK_BYTES))
    await big.sender.add(new Uint8Array(CHUNK_BYTES))
    expect(big.sender.final()).toBeUndefined()
    await turn()
    expect(big.received.map((m) => m.t)).toEqual(['head', 'chunk'])
    expect((big.received[0] as { b: ArrayBuffer }).b.byteLength).toBe(WINDOW * CHUNK_BYTES)
  })

  it('gives nothing back once the head left: the rest follows it on the port, the end with the last bytes', async () => {
    const { sender, received } = channel()
    sender.head({ status: 200, headers: [] })
    await sender.add(Buffer.from('first'))
    await turn()
    await sender.add(Buffer.from(' last'))
    expect(sender.final()).toBeUndefined()
    await sender.flush(true)
    await turn()
    expect(received.map((m) => m.t)).toEqual(['head', 'chunk'])
    expect(text((received[0] as { b?: ArrayBuffer }).b)).toBe('first')
    expect(received[1]).toMatchObject({ t: 'chunk', end: true })
    expect(text((received[1] as { b?: ArrayBuffer }).b)).toBe(' last')
  })
})
