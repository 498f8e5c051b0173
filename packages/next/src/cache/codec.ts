import { deserialize, serialize } from 'node:v8'

// v8 serialization, not JSON or structured clone: it keeps Buffers as Buffers (rscData,
// route bodies), Maps as Maps (segmentData) and undefined, NaN and Infinity as they are.

export function encode (value: unknown): Buffer {
  return serialize(value)
}

export function decode<T> (bytes: Uint8Array): T {
  return deserialize(bytes) as T
}
