// Service-assigned source ids: "src_" + 22 base62 characters (≈131 bits) from the CSPRNG.
import { randomBytes } from 'node:crypto'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const LENGTH = 22

export function newSourceId (): string {
  let out = 'src_'
  while (out.length < 4 + LENGTH) {
    for (const byte of randomBytes(32)) {
      // 248 = 4 × 62: rejecting bytes ≥ 248 keeps every character equally likely.
      if (byte < 248 && out.length < 4 + LENGTH) out += ALPHABET[byte % 62]
    }
  }
  return out
}
