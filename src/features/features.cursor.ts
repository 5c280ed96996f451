// The opaque cursor of a `next` link: the sort values and id of the last row of the page, and a
// digest of the query it belongs to. Keyset paging: page 1,000 costs what page 1 costs, and a
// client paging while others write never sees a row twice nor misses one that existed
// throughout. A cursor that does not decode, or belongs to another query, is a 400.
import { createHash } from 'node:crypto'
import { parseDateTime } from '../sources/datetime.js'
import { type ListFilter, type SortKey, type SortValues, keyType } from '../sources/sources.listing.js'

interface CursorBody { v: SortValues, i: string, q: string }

/** What a cursor is bound to: the filter and the order (not the limit, the CRS nor the properties, which may change). */
export function queryDigest (filter: ListFilter, sort: readonly SortKey[]): string {
  return createHash('sha256').update(JSON.stringify({ filter, sort })).digest('base64url').slice(0, 16)
}

export function encodeCursor (values: SortValues, id: string, digest: string): string {
  return Buffer.from(JSON.stringify({ v: values, i: id, q: digest } satisfies CursorBody)).toString('base64url')
}

/** The position a cursor holds (the values of every key but the last, id), or an error message. */
export function decodeCursor (cursor: string, digest: string, sort: readonly SortKey[]): { values: SortValues, id: string } | string {
  let body: unknown
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return 'is not a cursor of this service: follow the next link as given'
  }
  const { v, i, q } = (body ?? {}) as Partial<CursorBody>
  const keys = sort.slice(0, -1)
  // Only a declared attribute's value may be null (a source without it).
  if (!Array.isArray(v) || v.length !== keys.length || !v.every((x, k) => typeof x === 'string' || (x === null && keys[k]?.as !== undefined)) || typeof i !== 'string' || typeof q !== 'string' || !/^src_[0-9A-Za-z]{1,64}$/.test(i)) {
    return 'is not a cursor of this service: follow the next link as given'
  }
  if (q !== digest) return 'belongs to another query (other filters or order): start again without it'
  return keys.some((key, k) => v[k] !== null && sortValueProblem(key, v[k] as string)) ? 'is not a cursor of this service: follow the next link as given' : { values: v, id: i }
}

/**
 * Whether a cursor's sort value is not one the service writes for this key: a cursor is not
 * signed (its digest only binds it to a query), so 2024-02-30 or a number out of range must be
 * refused here rather than by PostgreSQL.
 */
function sortValueProblem (key: SortKey, v: string): boolean {
  const field = key.field
  switch (keyType(key)) {
    case 'boolean': return v !== 'true' && v !== 'false'
    case 'timestamp': return !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/.test(v) || typeof parseDateTime(v) === 'string'
    case 'integer': return !/^-?\d{1,18}$/.test(v)
    case 'number': return !/^-?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i.test(v) || !Number.isFinite(Number(v))
    default: return field === 'id' && key.as === undefined ? !/^src_[0-9A-Za-z]{1,64}$/.test(v) : v.includes('\u0000')
  }
}
