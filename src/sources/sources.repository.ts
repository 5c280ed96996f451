// SQL for writing and reading single sources, as plain functions that take the database (or a
// transaction) first and own no batching and no transaction: the caller decides. Writes are one
// set-based INSERT … SELECT FROM unnest(…) for any number of features and requests, so a
// collection is atomic and costs one round trip; its polygons travel as one binary EWKB
// MultiPolygon that ST_Dump splits back into rows, in order. When the database rejects a write,
// diagnoseSources evaluates each constraint per feature (rejections.ts says which one failed).
// Listings are in sources.listing.ts.
import { type Expression, type Kysely, sql } from 'kysely'
import type { Database, Db, Scope } from '../db/database.js'
import { multiPolygonEwkb } from '../db/ewkb.js'
import { isoUtc, rangeLower, rangeUpper, stAsGeoJson } from '../db/postgis.js'
import type { ValidFeature } from './geojson.js'

/** A checked feature with the id the service gave it. */
export interface NewSource extends ValidFeature { id: string }

export interface Owner { organisation: string, accountId: string }

/** One request's sources and who wrote them; several go into one INSERT. */
export interface SourceInsert { owner: Owner, sources: NewSource[] }

/** One conflict of a source, seen from it (source_conflicts). */
export interface Conflict {
  id: string
  overlap_m2: number
  overlap_ratio: number
  overlap_start: string
  overlap_end: string
}

/** A source's conflicts are listed up to this many, largest overlap first; beyond, a total. */
export const CONFLICTS_LISTED = 100

/** A source as read: every date-time already in the API's one format (db/postgis.ts isoUtc). */
export interface SourceRow {
  id: string
  feature_id: string
  organisation: string
  /** GeoJSON text of the polygon, from ST_AsGeoJSON. */
  geometry: string
  start_at: string
  end_at: string
  created_at: string
  area_m2: number
  /**
   * Up to CONFLICTS_LISTED + 1 of its conflicts as [id, overlap_m2, overlap_ratio, start, end],
   * and how many it has when more than CONFLICTS_LISTED; null when it has none (most sources:
   * nothing to parse).
   */
  conflicts: { list: Array<[string, number, number, string, string]>, total: number | null } | null
}

function unnestSources (sources: NewSource[]) {
  return sql`ROWS FROM (
    unnest(${sources.map((s) => s.id)}::text[]),
    unnest(${sources.map((s) => s.featureId)}::text[]),
    ST_Dump(${multiPolygonEwkb(sources.map((s) => s.rings))}::bytea::geometry),
    unnest(${sources.map((s) => s.startAt)}::timestamptz[]),
    unnest(${sources.map((s) => s.endAt)}::timestamptz[])
  ) WITH ORDINALITY AS t(id, feature_id, path, geom, start_at, end_at, ord)`
}

/** Inserts the sources of one or more requests in one statement, each row with its own owner. */
export async function insertSources (db: Db, inserts: SourceInsert[]): Promise<void> {
  const all = inserts.flatMap((i) => i.sources)
  const owners = inserts.flatMap((i) => i.sources.map(() => i.owner))
  await sql`
    INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT t.id, t.feature_id, o.organisation, o.created_by, t.geom, tstzrange(t.start_at, t.end_at, '[)')
    FROM ${unnestSources(all)}
    JOIN ROWS FROM (
      unnest(${owners.map((o) => o.organisation)}::text[]),
      unnest(${owners.map((o) => o.accountId)}::uuid[])
    ) WITH ORDINALITY AS o(organisation, created_by, ord) ON o.ord = t.ord`.execute(db)
}

/** The conflicts of each of these sources, as read back (NULL for those without any). */
export function selectConflictsOf (db: Db, ids: string[]) {
  return db.selectFrom(sql<{ id: string }>`(SELECT unnest(${ids}::text[]) AS id)`.as('t'))
    .select((eb) => ['t.id', conflictsColumn(eb.ref('t.id'))])
}

/** The sources that have conflicts, and theirs; a source without any is not in it. */
export type ConflictsById = Map<string, Pick<SourceRow, 'conflicts'>>

export function conflictsById (rows: Array<{ id: string } & Pick<SourceRow, 'conflicts'>>): ConflictsById {
  return new Map(rows.filter((r) => r.conflicts !== null).map((r) => [r.id, r]))
}

export async function conflictsOfSources (db: Db, ids: string[]): Promise<ConflictsById> {
  return conflictsById(await selectConflictsOf(db, ids).execute())
}

class RolledBack extends Error {}

/**
 * Inserts in a transaction, reads the new sources' conflicts, and commits only when `keep`
 * says so (dry runs, and on_conflict=reject when there are conflicts, roll back). The conflict
 * triggers' locks are held until then, so what was read is what a commit would have recorded.
 */
export async function insertSourcesIf (db: Kysely<Database>, insert: SourceInsert, keep: (conflicts: ConflictsById) => boolean): Promise<{ conflicts: ConflictsById, kept: boolean }> {
  let conflicts: ConflictsById = new Map()
  try {
    await db.transaction().execute(async (trx) => {
      await insertSources(trx, [insert])
      conflicts = await conflictsOfSources(trx, insert.sources.map((s) => s.id))
      if (!keep(conflicts)) throw new RolledBack()
    })
    return { conflicts, kept: true }
  } catch (err) {
    if (err instanceof RolledBack) return { conflicts, kept: false }
    throw err
  }
}

export interface SourceDiagnosis {
  index: number
  valid: boolean
  reason: string | null
  location: [number, number] | null
  ring: number | null
  inWindow: boolean
  existingId: string | null
  windowStart: string
  windowEnd: string
}

/** Per feature, what the constraints of `sources` say about it (run after an INSERT was rejected). */
export async function diagnoseSources (db: Db, organisation: string, sources: NewSource[]): Promise<SourceDiagnosis[]> {
  const { rows } = await sql<{
    ord: string, valid: boolean, reason: string | null, x: number | null, y: number | null, ring: number | null,
    in_window: boolean, existing_id: string | null, window_start: string, window_end: string
  }>`
    SELECT t.ord, v.valid, v.reason, ST_X(v.location) AS x, ST_Y(v.location) AS y,
      CASE WHEN v.location IS NOT NULL THEN (
        SELECT r.path[1] FROM ST_DumpRings(t.geom) AS r
        ORDER BY ST_Distance(ST_Boundary(r.geom), ST_SetSRID(v.location, 4326)) LIMIT 1) END AS ring,
      tstzrange(t.start_at, t.end_at, '[)') <@ sources_period_window() AS in_window,
      (SELECT s.id FROM sources AS s
        WHERE s.organisation = ${organisation} AND s.feature_id = t.feature_id
          AND s.period && tstzrange(t.start_at, t.end_at, '[)')
        ORDER BY s.created_at LIMIT 1) AS existing_id,
      ${isoUtc(rangeLower(sql`sources_period_window()`))} AS window_start,
      ${isoUtc(rangeUpper(sql`sources_period_window()`))} AS window_end
    FROM ${unnestSources(sources)}
    CROSS JOIN LATERAL ST_IsValidDetail(t.geom) AS v
    ORDER BY t.ord`.execute(db)
  return rows.map((r) => ({
    index: Number(r.ord) - 1,
    valid: r.valid,
    reason: r.reason,
    location: r.x === null || r.y === null ? null : [r.x, r.y],
    ring: r.ring,
    inWindow: r.in_window,
    existingId: r.existing_id,
    windowStart: r.window_start,
    windowEnd: r.window_end
  }))
}

/**
 * The conflicts of the source with this id, largest overlap first, up to CONFLICTS_LISTED + 1
 * (the extra one says there are more; then the total is counted), as one JSON value. Read from
 * the index source_conflict_pairs_by_overlap alone.
 */
function conflictsColumn (id: Expression<unknown>) {
  return sql<SourceRow['conflicts']>`(SELECT CASE WHEN count(*) > 0 THEN json_build_object(
      'list', json_agg(json_build_array(c.other_id, c.overlap_m2, c.overlap_ratio,
        ${isoUtc(sql`lower(c.overlap_period)`)}, ${isoUtc(sql`upper(c.overlap_period)`)}) ORDER BY c.overlap_m2 DESC, c.other_id),
      'total', CASE WHEN count(*) > ${sql.lit(CONFLICTS_LISTED)} THEN (SELECT count(*) FROM source_conflict_pairs AS p WHERE p.source_id = ${id}) END) END
    FROM (SELECT p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period FROM source_conflict_pairs AS p
      WHERE p.source_id = ${id} ORDER BY p.overlap_m2 DESC, p.other_id LIMIT ${sql.lit(CONFLICTS_LISTED + 1)}) AS c)`.as('conflicts')
}

/** The columns of a source as the API returns it. */
function sourceColumns (id: Expression<unknown>, geom: Expression<unknown>, period: Expression<unknown>, createdAt: Expression<unknown>) {
  return [
    stAsGeoJson(geom).as('geometry'),
    isoUtc(rangeLower(period)).as('start_at'),
    isoUtc(rangeUpper(period)).as('end_at'),
    isoUtc(createdAt).as('created_at'),
    conflictsColumn(id)
  ] as const
}

/** The sources with these ids, whatever their organisation (the caller checks the scope). */
export function selectSourcesByIds (db: Db, ids: string[]) {
  return db.selectFrom('sources')
    .select((eb) => ['id', 'feature_id', 'organisation', 'area_m2', ...sourceColumns(eb.ref('sources.id'), eb.ref('geom'), eb.ref('period'), eb.ref('created_at'))])
    .where('id', '=', sql<string>`any(${ids}::text[])`)
}

export async function findSourcesByIds (db: Db, ids: string[]): Promise<SourceRow[]> {
  return selectSourcesByIds(db, ids).execute()
}

/** Whether a row may be seen in a scope: its organisation's own, or any for admins. */
export const visibleIn = (row: SourceRow | undefined, scope: Scope): SourceRow | undefined =>
  row !== undefined && (scope === 'all' || row.organisation === scope.organisation) ? row : undefined

/** One source, when it exists and is visible in the scope. */
export async function findSourceById (db: Db, id: string, scope: Scope): Promise<SourceRow | undefined> {
  const [row] = await findSourcesByIds(db, [id])
  return visibleIn(row, scope)
}

/** DELETE of one id, limited to an organisation unless the scope is every organisation. */
export function deleteSourceQuery (db: Db, id: string, scope: Scope) {
  const query = db.deleteFrom('sources').where('id', '=', id)
  return scope === 'all' ? query : query.where('organisation', '=', scope.organisation)
}

/** Returns false when no source with that id is visible in the scope. */
export async function deleteSource (db: Db, id: string, scope: Scope): Promise<boolean> {
  const r = await deleteSourceQuery(db, id, scope).executeTakeFirst()
  return r.numDeletedRows > 0n
}
