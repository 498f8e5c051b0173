import { promisify } from 'node:util'
import { gunzip, gzip } from 'node:zlib'
import { isFiniteNumber } from '../entry-meta.ts'

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

/** Why an entry read from Redis is not used: it is treated as none. */
export class EntryRefused extends Error {}

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

/**
 * Reads an entry from Redis. Whatever is there may be damaged, written by another program
 * under the same prefix, or hostile: anything that is not an entry this codec writes throws
 * EntryRefused, and a gzipped value may not inflate past `maxBytes` (the most shared memory
 * would take), however small it is in Redis.
 */
export async function decodeEntry (raw: Buffer, maxBytes: number): Promise<{ header: EntryHeader, value: Buffer }> {
  if (raw.length < 4) throw new EntryRefused('shorter than its length field')
  const length = raw.readUInt32LE(0)
  if (length > raw.length - 4) throw new EntryRefused('header longer than the entry')
  let header: unknown
  try {
    header = JSON.parse(raw.toString('utf8', 4, 4 + length))
  } catch {
    throw new EntryRefused('header is not JSON')
  }
  if (!isEntryHeader(header)) throw new EntryRefused('header of the wrong shape')
  const body = raw.subarray(4 + length)
  if (header.z !== 1) {
    if (body.length > maxBytes) throw new EntryRefused('value too large')
    return { header, value: Buffer.from(body) }
  }
  try {
    return { header, value: await gunzipAsync(body, { maxOutputLength: Math.max(1, maxBytes) }) }
  } catch {
    throw new EntryRefused('value does not inflate within the size limit')
  }
}

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string')

function isEntryHeader (h: unknown): h is EntryHeader {
  if (typeof h !== 'object' || h === null || Array.isArray(h)) return false
  const { t, p, s, x, m, v, z } = h as Record<string, unknown>
  if (t !== undefined && !isStringArray(t)) return false
  // A path that does not start with '/' could never be reached by a path invalidation.
  if (p !== undefined && (typeof p !== 'string' || !p.startsWith('/'))) return false
  if (s !== undefined && !isFiniteNumber(s)) return false
  if (x !== undefined && !isFiniteNumber(x)) return false
  if (m !== undefined && (typeof m !== 'object' || m === null || Array.isArray(m))) return false
  if (z !== undefined && z !== 1) return false
  if (v !== undefined) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
    if (!Object.values(v).every(isFiniteNumber)) return false
  }
  return true
}
