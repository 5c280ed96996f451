// Feed positions as opaque cursors: "<txid>.<seq>.<mac>", the position signed with a key derived
// from JWT_SECRET, so a client can only hand back a position the service gave out.
import { createHmac, timingSafeEqual } from 'node:crypto'

/** A place in the feed: every event up to (txid, seq) in feed order lies behind it. */
export interface Position { txid: string, seq: string }

export const START: Position = { txid: '0', seq: '0' }

const FORM = /^(\d{1,20})\.(\d{1,19})\.([A-Za-z0-9_-]{22})$/

export interface CursorCodec {
  encode: (p: Position) => string
  /** The position of a cursor this service made; undefined for anything else. */
  decode: (cursor: string) => Position | undefined
}

export function cursorCodec (secret: string): CursorCodec {
  const key = createHmac('sha256', secret).update('source-registry events cursor v1').digest()
  const mac = (p: Position) => createHmac('sha256', key).update(`${p.txid}.${p.seq}`).digest().subarray(0, 16).toString('base64url')
  return {
    encode: (p) => `${p.txid}.${p.seq}.${mac(p)}`,
    decode: (cursor) => {
      const m = FORM.exec(cursor)
      if (m === null) return undefined
      const p = { txid: m[1] as string, seq: m[2] as string }
      const given = Buffer.from(m[3] as string)
      const expected = Buffer.from(mac(p))
      return given.length === expected.length && timingSafeEqual(given, expected) ? p : undefined
    }
  }
}

/** Feed order: txid, then seq (both decimal strings of unsigned integers). */
export function comparePositions (a: Position, b: Position): number {
  const big = (s: string) => BigInt(s)
  const t = big(a.txid) - big(b.txid)
  if (t !== 0n) return t < 0n ? -1 : 1
  const s = big(a.seq) - big(b.seq)
  return s === 0n ? 0 : s < 0n ? -1 : 1
}
