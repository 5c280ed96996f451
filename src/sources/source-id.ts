// Service-assigned source ids: "src_" + 22 base62 characters (≈131 bits) from the CSPRNG.
import { randomBytes } from 'node:crypto'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const LENGTH = 22

/** `count` new ids, drawing random bytes in one call for all of them (one call per id costs more). */
export function newSourceIds (count: number): string[] {
  const ids: string[] = []
  let id = ''
  while (ids.length < count) {
    // ~26 bytes per id on average (8 of 256 byte values are rejected); ask for a little more.
    for (const byte of randomBytes(Math.ceil((count - ids.length) * LENGTH * 1.1) + 8)) {
      // 248 = 4 × 62: rejecting bytes ≥ 248 keeps every character equally likely.
      if (byte >= 248) continue
      id += ALPHABET[byte % 62]
      if (id.length === LENGTH) {
        ids.push(`src_${id}`)
        id = ''
        if (ids.length === count) break
      }
    }
  }
  return ids
}
