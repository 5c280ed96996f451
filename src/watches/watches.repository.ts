// SQL of the watched areas (sql/061_watches.sql): plain functions that take the database first.
// The matching itself is the database's (sql/functions/watches.sql): a trigger on sources.
import { sql } from 'kysely'
import type { Db, Scope } from '../db/database.js'
import { areasEwkb } from '../db/ewkb.js'
import { isoUtc } from '../db/postgis.js'
import type { Area } from '../db/ewkb.js'

/** A watch as stored, its area as GeoJSON text. */
export interface WatchRow {
  id: string
  organisation: string
  geometry: string
  start_at: string
  end_at: string
  area_m2: number
  filter: string | null
  filter_lang: string | null
  created_at: string
}

export interface NewWatch {
  organisation: string
  createdBy: string
  geometry: Area
  startAt: string
  endAt: string
  filter: { text: string, lang: string, sql: string } | null
}

/** What the database says of an area before it is stored: valid (else why, and where), and its area in m². */
export interface AreaCheck { valid: boolean, reason: string | null, areaM2: number }

const geomOf = (area: Area) => sql`ST_SetSRID(ST_GeometryN(${areasEwkb([area])}::bytea::geometry, 1), 4326)`

export async function checkWatchArea (db: Db, area: Area): Promise<AreaCheck> {
  const { rows } = await sql<{ valid: boolean, reason: string | null, area_m2: number }>`
    SELECT v.valid, v.reason, CASE WHEN v.valid THEN lonlat_area_m2(g) ELSE 0 END AS area_m2
    FROM (SELECT ${geomOf(area)} AS g) AS a CROSS JOIN LATERAL ST_IsValidDetail(a.g) AS v`.execute(db)
  const r = rows[0] as { valid: boolean, reason: string | null, area_m2: number }
  return { valid: r.valid, reason: r.reason, areaM2: r.area_m2 }
}

const columns = sql`w.id, w.organisation, ST_AsGeoJSON(w.geom, 15) AS geometry, ${isoUtc(sql`lower(w.period)`)} AS start_at, ${isoUtc(sql`upper(w.period)`)} AS end_at,
  w.area_m2, w.filter, w.filter_lang, ${isoUtc(sql`w.created_at`)} AS created_at`

export async function insertWatch (db: Db, w: NewWatch): Promise<WatchRow> {
  const { rows } = await sql<WatchRow>`
    WITH w AS (
      INSERT INTO watches (organisation, created_by, geom, period, filter, filter_lang, filter_sql)
      VALUES (${w.organisation}, ${w.createdBy}::uuid, ${geomOf(w.geometry)}, tstzrange(${w.startAt}::timestamptz, ${w.endAt}::timestamptz, '[)'),
        ${w.filter?.text ?? null}, ${w.filter?.lang ?? null}, ${w.filter?.sql ?? null})
      RETURNING *)
    SELECT ${columns} FROM w`.execute(db)
  return rows[0] as WatchRow
}

const scoped = (scope: Scope) => scope === 'all' ? sql`true` : sql`w.organisation = ${scope.organisation}`

/** A page of the watches visible in the scope, in id order, after `after`; limit + 1 of them. */
export async function listWatches (db: Db, scope: Scope, limit: number, after: string | undefined): Promise<WatchRow[]> {
  const { rows } = await sql<WatchRow>`SELECT ${columns} FROM watches AS w
    WHERE ${scoped(scope)} AND (${after ?? null}::text IS NULL OR w.id > ${after ?? null}::text)
    ORDER BY w.id LIMIT ${limit + 1}::int`.execute(db)
  return rows
}

export async function findWatch (db: Db, id: string, scope: Scope): Promise<WatchRow | undefined> {
  const { rows } = await sql<WatchRow>`SELECT ${columns} FROM watches AS w WHERE w.id = ${id} AND ${scoped(scope)}`.execute(db)
  return rows[0]
}

export async function deleteWatch (db: Db, id: string, scope: Scope): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`DELETE FROM watches AS w WHERE w.id = ${id} AND ${scoped(scope)} RETURNING w.id`.execute(db)
  return rows.length > 0
}
