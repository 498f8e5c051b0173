// Preloaded into a server (`node --import ./count-posts.mjs app`, so that worker threads,
// which inherit execArgv, load it too) by bench/pool-dispatch.mjs: counts what every thread
// posts on MessagePorts, by message kind, without touching the runtime's code. For each post
// it records the bytes the structured clone copies (v8.serialize of the message, the same
// serializer postMessage uses, with moved ArrayBuffers and ports left out) and the bytes of
// the ArrayBuffers moved in its transfer list (not copied by the post; the sender filled
// them with one copy of its own). Each thread writes its running totals to
// `$SPINDLE_BENCH_POSTS/<threadId>.json` every 100 ms. Slows every post: for counting only.
import { renameSync, writeFileSync } from 'node:fs'
import v8 from 'node:v8'
import { MessagePort, threadId } from 'node:worker_threads'

const dir = process.env.SPINDLE_BENCH_POSTS
if (dir) {
  const totals = {}
  const post = MessagePort.prototype.postMessage
  MessagePort.prototype.postMessage = function (message, transfer) {
    try { tally(message, transfer) } catch { /* counting never breaks a post */ }
    return post.call(this, message, transfer)
  }
  // Written aside and renamed: the reader never sees a file half written.
  const save = () => {
    writeFileSync(`${dir}/${threadId}.tmp`, JSON.stringify(totals))
    renameSync(`${dir}/${threadId}.tmp`, `${dir}/${threadId}.json`)
  }
  setInterval(save, 100).unref()

  function tally (message, transfer) {
    const list = Array.isArray(transfer) ? transfer : transfer?.transfer ?? []
    const moved = new Set(list)
    let movedBytes = 0
    for (const item of list) if (item instanceof ArrayBuffer) movedBytes += item.byteLength
    const kind = kindOf(message)
    const t = totals[kind] ??= { messages: 0, cloned: 0, moved: 0 }
    t.messages++
    t.cloned += v8.serialize(strip(message, moved)).byteLength
    t.moved += movedBytes
  }
}

/** The pool protocol's message kind (packages/runtime/src/pool/protocol.ts), or piscina's envelope. */
function kindOf (m) {
  if (m === null || typeof m !== 'object') return 'other'
  if (typeof m.t === 'string') return m.t
  if ('taskId' in m && 'task' in m) return 'piscina task (request head)'
  if ('taskId' in m) return 'piscina result'
  if (m.spindlePool) return 'ready'
  return 'other'
}

/** `value` with moved buffers and ports replaced by null: what the structured clone copies. */
function strip (value, moved) {
  if (value === null || typeof value !== 'object') return value
  if (moved.has(value) || value instanceof MessagePort) return null
  if (ArrayBuffer.isView(value)) return moved.has(value.buffer) ? null : value
  if (value instanceof ArrayBuffer) return value
  if (Array.isArray(value)) return value.map((v) => strip(v, moved))
  const out = {}
  for (const [k, v] of Object.entries(value)) out[k] = strip(v, moved)
  return out
}
