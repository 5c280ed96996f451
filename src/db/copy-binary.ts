// A statement's rows as PostgreSQL's binary COPY sends them (COPY (…) TO STDOUT (FORMAT binary),
// through pg-copy-streams), for a reader that copies values into a file of its own without
// making a JavaScript value of each: pg makes a string of every field of every row (bytea as hex
// text to decode), which was most of a large FlatGeobuf export's time in Node
// (docs/performance.md). Only the server backend's pools can copy (not behind a transaction
// pooler); elsewhere rows are read as before.
import type { Kysely } from 'kysely'
import pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'
import type { Database } from './database.js'
import { copyPoolOf } from './connect.js'

/**
 * Rows of a binary COPY: field f of row r is data[starts[r * fields + f]] and the
 * lengths[r * fields + f] bytes after it, in the field type's binary form (its send function's);
 * a length of -1 is NULL.
 */
export interface BinaryRows {
  data: Buffer
  fields: number
  count: number
  starts: Int32Array
  lengths: Int32Array
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')

/** The rows of a binary COPY's whole output (its header, tuples and trailer). */
export function parseBinaryCopy (data: Buffer): BinaryRows {
  if (data.length < 19 || !data.subarray(0, 11).equals(SIGNATURE)) throw new Error('not a binary COPY')
  let at = 15 + 4 + data.readUInt32BE(15)
  let fields = -1
  let count = 0
  let starts = new Int32Array(1024)
  let lengths = new Int32Array(1024)
  for (;;) {
    const n = data.readInt16BE(at)
    at += 2
    if (n === -1) break
    if (fields === -1) fields = n
    else if (n !== fields) throw new Error(`binary COPY: a row of ${n} fields among rows of ${fields}`)
    while ((count + 1) * n > starts.length) {
      const grownStarts = new Int32Array(starts.length * 2)
      grownStarts.set(starts)
      starts = grownStarts
      const grownLengths = new Int32Array(lengths.length * 2)
      grownLengths.set(lengths)
      lengths = grownLengths
    }
    const base = count * n
    for (let f = 0; f < n; f++) {
      const length = data.readInt32BE(at)
      at += 4
      starts[base + f] = at
      lengths[base + f] = length
      if (length > 0) at += length
    }
    if (at > data.length) throw new Error('binary COPY: cut short')
    count++
  }
  return { data, fields: Math.max(fields, 0), count, starts, lengths }
}

/**
 * A statement's parameters written into its text as literals, for COPY (which takes none): each
 * as a quoted literal, of unknown type as a parameter sent as text is, so PostgreSQL resolves its
 * type from the same context. Only strings, finite numbers, booleans and null: undefined for any
 * other (a Date, an array, a Buffer), whose text form pg chooses itself. A `$n` is a placeholder
 * only outside quoted literals and identifiers: a CQL2 filter's attribute name is written into
 * the text as a literal and may hold one.
 */
export function inlineParameters (text: string, parameters: readonly unknown[]): string | undefined {
  const literals: string[] = []
  for (const p of parameters) {
    if (p === null) literals.push('NULL')
    else if (typeof p === 'string') literals.push(pg.escapeLiteral(p))
    else if ((typeof p === 'number' && Number.isFinite(p)) || typeof p === 'boolean') literals.push(`'${String(p)}'`)
    else return undefined
  }
  let out = ''
  let from = 0
  let quote = ''
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (quote !== '') {
      // A doubled quote is one quote inside; the other ends it.
      if (c === quote) {
        if (text[i + 1] === quote) i++
        else quote = ''
      }
      continue
    }
    if (c === '\'' || c === '"') {
      // Kysely writes no E'' strings (a backslash would escape there), nor dollar quotes.
      if (c === '\'' && /[eE]/.test(text[i - 1] ?? '') && !/\w/.test(text[i - 2] ?? '')) return undefined
      quote = c
    } else if (c === '$') {
      const digits = /^\d+/.exec(text.slice(i + 1))
      if (digits === null) return undefined
      const literal = literals[Number(digits[0]) - 1]
      if (literal === undefined) return undefined
      out += text.slice(from, i) + literal
      i += digits[0].length
      from = i + 1
    }
  }
  return quote === '' ? out + text.slice(from) : undefined
}

/** Whether `db` can copy (a server backend's pool, not behind a transaction pooler: connect.ts copyable). */
export const canCopy = (db: Kysely<Database>): boolean => copyPoolOf(db) !== undefined

/** The rows of a compiled statement through binary COPY on a connection of db's pool (canCopy; the parameters inlinable). */
export async function copyBinary (db: Kysely<Database>, query: { sql: string, parameters: readonly unknown[] }): Promise<BinaryRows> {
  const pool = copyPoolOf(db)
  const text = inlineParameters(query.sql, query.parameters)
  if (pool === undefined || text === undefined) throw new Error('this statement cannot be copied')
  const client = await pool.connect()
  let failed: Error | undefined
  try {
    const parts: Buffer[] = []
    for await (const part of client.query(copyTo(`COPY (${text}) TO STDOUT (FORMAT binary)`)) as AsyncIterable<Buffer>) parts.push(part)
    return parseBinaryCopy(parts.length === 1 ? parts[0] as Buffer : Buffer.concat(parts))
  } catch (e) {
    failed = e as Error
    throw e
  } finally {
    // A connection whose copy failed midway is closed rather than given to the next statement.
    client.release(failed)
  }
}
