// Typed sql<T> helpers for the few PostGIS and range functions the service uses.
import { type Expression, type RawBuilder, sql } from 'kysely'

/** GeoJSON text of a geometry, with enough decimals (15) to give back exactly the doubles stored. */
export function stAsGeoJson (geom: Expression<unknown>): RawBuilder<string> {
  return sql<string>`ST_AsGeoJSON(${geom}, 15)`
}

/** A timestamptz as ISO 8601 in UTC with microseconds, e.g. 2024-01-01T00:00:00.000000Z. */
export function isoUtc (ts: RawBuilder<unknown> | Expression<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${ts} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
}

export function rangeLower (range: Expression<unknown>): RawBuilder<unknown> {
  return sql`lower(${range})`
}

export function rangeUpper (range: Expression<unknown>): RawBuilder<unknown> {
  return sql`upper(${range})`
}
