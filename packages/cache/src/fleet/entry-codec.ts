import { promisify } from 'node:util'
import { gunzip, gzip } from 'node:zlib'

const gzipAsync = promisify(gzip)
const gunzipAsync = promisify(gunzip)

/** What travels with an entry's bytes to Redis. */
export interface EntryHeader {
  /** Tags, path, staleAt, expireAt, meta, as stored in shared memory. */
  t?: string[]
  p?: string
  s?: number
  x?: number
  m?: unknown
  /** Version of each of its tags and path tags when it was written (tags never invalidated are left out). */
  v?: Record<string, number>
  /** 1 when the value is gzipped. */
  z?: 1
}

// [u32 header length][header JSON][value]. gzip runs on libuv's thread pool, not the event loop.
export async function encodeEntry (header: EntryHeader, value: Uint8Array, compressAbove: number): Promise<Buffer> {
  let body = value
  if (value.length > compressAbove) {
    body = await gzipAsync(value, { level: 4 })
    header.z = 1
  }
  const json = Buffer.from(JSON.stringify(header))
  const out = Buffer.allocUnsafe(4 + json.length + body.length)
  out.writeUInt32LE(json.length, 0)
  json.copy(out, 4)
  out.set(body, 4 + json.length)
  return out
}

export async function decodeEntry (raw: Buffer): Promise<{ header: EntryHeader, value: Buffer }> {
  const length = raw.readUInt32LE(0)
  const header = JSON.parse(raw.toString('utf8', 4, 4 + length)) as EntryHeader
  const body = raw.subarray(4 + length)
  return { header, value: header.z === 1 ? await gunzipAsync(body) : Buffer.from(body) }
}
