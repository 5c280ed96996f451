// What an API key looks like: `srk_<id>_<secret>`, the id 22 base62 characters (the row's key, and
// the OAuth2 client_id), the secret 43 base62 characters (256 bits) from the CSPRNG. The id is in
// the key so a request finds its row by primary key; only a SHA-256 of the secret is stored, and
// compared in constant time. A fast hash is enough for a secret this random: no one can guess it,
// so there is nothing for a slow hash to slow down, and each request costs a microsecond.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const KEY_PREFIX = 'srk_'
const ID_LENGTH = 22
// 43 × log2(62) ≈ 256.03 bits.
const SECRET_LENGTH = 43
const KEY_SHAPE = /^srk_([0-9A-Za-z]{22})_([0-9A-Za-z]{43})$/
export const KEY_ID_PATTERN = '^[0-9A-Za-z]{22}$'

/** `length` characters of base62, each equally likely. */
function base62 (length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length + 8)) {
      // 248 = 4 × 62: rejecting bytes ≥ 248 keeps every character equally likely.
      if (byte >= 248) continue
      out += ALPHABET[byte % 62]
      if (out.length === length) break
    }
  }
  return out
}

export interface NewKey { id: string, key: string, secretSha256: Buffer }

export function newApiKey (): NewKey {
  const id = base62(ID_LENGTH)
  const secret = base62(SECRET_LENGTH)
  return { id, key: `${KEY_PREFIX}${id}_${secret}`, secretSha256: sha256(secret) }
}

/** What a listing shows of a key: the part that names it, never the secret. */
export const keyPrefix = (id: string): string => `${KEY_PREFIX}${id}_`

export const looksLikeKey = (text: string): boolean => text.startsWith(KEY_PREFIX)

/** The id and secret of a well-formed key, or undefined. */
export function parseApiKey (key: string): { id: string, secret: string } | undefined {
  const m = KEY_SHAPE.exec(key)
  return m === null ? undefined : { id: m[1] as string, secret: m[2] as string }
}

export const sha256 = (secret: string): Buffer => createHash('sha256').update(secret).digest()

/** Whether `secret` hashes to `stored`, in time independent of where they differ. */
export function secretMatches (secret: string, stored: Uint8Array): boolean {
  const given = sha256(secret)
  return stored.length === given.length && timingSafeEqual(given, stored)
}
