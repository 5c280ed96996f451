// Typed sql<T> helpers for the few PostGIS and range functions the service uses.
import { type Expression, type RawBuilder, sql } from 'kysely'

/** GeoJSON text of a geometry, with enough decimals (15) to give back exactly the doubles stored. */
export function stAsGeoJson (geom: Expression<unknown>): RawBuilder<string> {
  return sql<string>`ST_AsGeoJSON(${geom}, 15)`
}

/**
 * A timestamptz in the API's one date-time format: ISO 8601 in UTC, with the fraction of a
 * second only when there is one, and no trailing zeros (2024-01-01T00:00:00Z, …T12:00:00.5Z).
 * Every date-time a response carries is made here.
 */
export function isoUtc (ts: RawBuilder<unknown> | Expression<unknown>): RawBuilder<string> {
  return sql<string>`regexp_replace(to_char(${ts} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '\\.?0+$', '') || 'Z'`
}

/**
 * The same instant with all six digits of its fraction (…T12:00:00.500000Z), for a reader that
 * trims them itself (isoUtcTrimmed): regexp_replace was a fifth of PostgreSQL's time for each row
 * of a FlatGeobuf export (docs/performance.md).
 */
export function isoUtcMicros (ts: RawBuilder<unknown> | Expression<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${ts} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
}

/** isoUtc's text from isoUtcMicros': the fraction's trailing zeros dropped, and its point when none is left. */
export function isoUtcTrimmed (micros: string): string {
  const z = micros.length - 1
  let end = z
  while (micros.charCodeAt(end - 1) === 0x30) end--
  if (micros.charCodeAt(end - 1) === 0x2E) end--
  return end === z ? micros : `${micros.slice(0, end)}Z`
}

export function rangeLower (range: Expression<unknown>): RawBuilder<unknown> {
  return sql`lower(${range})`
}

export function rangeUpper (range: Expression<unknown>): RawBuilder<unknown> {
  return sql`upper(${range})`
}
