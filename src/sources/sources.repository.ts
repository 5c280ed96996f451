// SQL for sources, as plain functions that take the database (or a transaction) first and own
// no batching and no transaction: the caller decides. Writes are one set-based INSERT … SELECT
// FROM unnest(…) for any number of features and requests, so a collection is atomic and costs
// one round trip; its polygons travel as one binary EWKB MultiPolygon that ST_Dump splits back
// into rows, in order. When the database rejects a write, diagnoseSources evaluates each
// constraint per feature (sources/rejections.ts says which one failed).
import { type Expression, type Kysely, type RawBuilder, type Transaction, sql } from 'kysely'
import type { Database } from '../db/database.js'
import { multiPolygonEwkb } from '../db/ewkb.js'
import { isoUtc, rangeLower, rangeUpper, stAsGeoJson } from '../db/postgis.js'
import type { ValidFeature } from './geojson.js'

export type Db = Kysely<Database> | Transaction<Database>

/** A checked feature with the id the service gave it. */
export interface NewSource extends ValidFeature { id: string }

export interface Owner { organisation: string, accountId: string }

/** One request's sources and who wrote them; several go into one INSERT. */
export interface SourceInsert { owner: Owner, sources: NewSource[] }

/** Who may see a source: one organisation, or every organisation (admins). */
export type Scope = { organisation: string } | 'all'

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

// Listing (OGC API – Features items): filters, a stable order and keyset paging.

export type SortField = 'id' | 'created_at' | 'start_at' | 'end_at'

export interface ListFilter {
  /** CRS84; west > east crosses the antimeridian. */
  bbox?: { west: number, south: number, east: number, north: number }
  /** An instant (start_at ≤ at < end_at) or a closed interval with open ends allowed; ISO 8601. */
  datetime?: { at?: string, from?: string, to?: string }
  featureId?: string
  organisation?: string
  /** Only sources with (true) or without (false) a conflict. */
  conflict?: boolean
}

export interface ListPage {
  sort: { field: SortField, descending: boolean }
  /** The sort value and id of the last row already seen. */
  after?: { value: string, id: string }
  limit: number
}

const SORT_EXPRESSIONS: Record<SortField, RawBuilder<string>> = {
  id: sql<string>`id`,
  created_at: sql<string>`created_at`,
  start_at: sql<string>`lower(period)`,
  end_at: sql<string>`upper(period)`
}

/** The sort value of a row as the cursor keeps it: the API's own string for it. */
export const sortValue = (row: SourceRow, field: SortField): string => row[field]

function envelope (west: number, south: number, east: number, north: number) {
  return sql`ST_MakeEnvelope(${west}::float8, ${south}::float8, ${east}::float8, ${north}::float8, 4326)`
}

// A shortcut for the exact test: a source whose bounding box lies inside the query box
// intersects it, without ST_Intersects. Bounding boxes are float4, rounded outward by up to
// 1.1e-5° at ±180, so the shortcut uses the box shrunk by 1e-4°; sources near its edge get the
// exact test. Halves the cost of a dense window (bench/NOTES.md).
const INNER_MARGIN = 1e-4

function intersectsBox (west: number, south: number, east: number, north: number) {
  const box = envelope(west, south, east, north)
  const exact = sql<boolean>`ST_Intersects(geom, ${box})`
  if (east - west <= 2 * INNER_MARGIN || north - south <= 2 * INNER_MARGIN) return sql<boolean>`(geom && ${box} AND ${exact})`
  const inner = envelope(west + INNER_MARGIN, south + INNER_MARGIN, east - INNER_MARGIN, north - INNER_MARGIN)
  return sql<boolean>`(geom && ${box} AND (geom @ ${inner} OR ${exact}))`
}

function filtered (db: Db, scope: Scope, filter: ListFilter) {
  let q = db.selectFrom('sources')
  if (scope !== 'all') q = q.where('organisation', '=', scope.organisation)
  if (filter.organisation !== undefined) q = q.where('organisation', '=', filter.organisation)
  if (filter.featureId !== undefined) q = q.where('feature_id', '=', filter.featureId)
  if (filter.conflict !== undefined) {
    const any = sql<boolean>`EXISTS (SELECT 1 FROM source_conflict_pairs AS p WHERE p.source_id = sources.id)`
    q = q.where(filter.conflict ? any : sql<boolean>`NOT ${any}`)
  }
  const { bbox, datetime } = filter
  if (bbox !== undefined) {
    // The query's envelope is transformed, never the column, so sources_geom_gist decides; a
    // box across the antimeridian is its two halves.
    const boxes = bbox.west <= bbox.east
      ? [[bbox.west, bbox.south, bbox.east, bbox.north] as const]
      : [[bbox.west, bbox.south, 180, bbox.north] as const, [-180, bbox.south, bbox.east, bbox.north] as const]
    q = q.where(({ or }) => or(boxes.map((box) => intersectsBox(...box))))
  }
  if (datetime?.at !== undefined) q = q.where(sql<boolean>`period @> ${datetime.at}::timestamptz`)
  else if (datetime?.from !== undefined || datetime?.to !== undefined) {
    q = q.where(sql<boolean>`period && tstzrange(${datetime.from ?? null}::timestamptz, ${datetime.to ?? null}::timestamptz, '[]')`)
  }
  return q
}

function pageOrder (page: ListPage) {
  const key = SORT_EXPRESSIONS[page.sort.field]
  const direction = page.sort.descending ? sql`DESC` : sql`ASC`
  return { key, direction }
}

/**
 * Up to page.limit + 1 rows (the extra one says there is a next page), in the page's order. The
 * page's ids are chosen first and only their rows are formatted: GeoJSON and dates are not made
 * for the thousands of matches a sort passes over.
 */
export async function listSources (db: Db, scope: Scope, filter: ListFilter, page: ListPage): Promise<SourceRow[]> {
  const { key, direction } = pageOrder(page)
  let ids = filtered(db, scope, filter).select(['id', key.as('sort_key')])
  const after = page.after
  if (after !== undefined) {
    const cast = page.sort.field === 'id' ? sql`::text` : sql`::timestamptz`
    ids = page.sort.descending
      ? ids.where(sql<boolean>`(${key}, id) < (${after.value}${cast}, ${after.id}::text)`)
      : ids.where(sql<boolean>`(${key}, id) > (${after.value}${cast}, ${after.id}::text)`)
  }
  const chosen = ids.orderBy(sql`${key} ${direction}, id ${direction}`).limit(page.limit + 1)
  return db.selectFrom('sources')
    .innerJoin(chosen.as('page'), 'page.id', 'sources.id')
    .select((eb) => ['sources.id', 'feature_id', 'organisation', 'area_m2', ...sourceColumns(eb.ref('sources.id'), eb.ref('geom'), eb.ref('period'), eb.ref('created_at'))])
    .orderBy(sql`page.sort_key ${direction}, page.id ${direction}`)
    .execute()
}

/** The number of matching sources when it is at most `cap`, else undefined (too many to count cheaply). */
async function countSources (db: Db, scope: Scope, filter: ListFilter, cap: number): Promise<number | undefined> {
  const inner = filtered(db, scope, filter).select(sql`1`.as('one')).limit(cap + 1)
  const row = await db.selectFrom(inner.as('matching')).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  const n = Number(row.n)
  return n > cap ? undefined : n
}

/**
 * A first page (no cursor) and the number of matching sources (undefined beyond `cap`).
 * - With a bbox, in one statement: the matches (id and sort key, up to cap + 1) are found once,
 *   counted, and the page is chosen among them. The exact spatial test reads every match's row
 *   anyway, so this is one spatial scan instead of two (1.8× the rate, bench/NOTES.md).
 * - Otherwise the page, then (only when there is more than one page) the count, which
 *   sources_organisation_period_gist answers from the index alone.
 */
export async function listFirstSources (db: Db, scope: Scope, filter: ListFilter, page: ListPage, cap: number): Promise<{ rows: SourceRow[], matched: number | undefined }> {
  if (filter.bbox === undefined) {
    const rows = await listSources(db, scope, filter, page)
    return { rows, matched: rows.length <= page.limit ? rows.length : await countSources(db, scope, filter, cap) }
  }
  const { key, direction } = pageOrder(page)
  const rows = await db
    .with((cte) => cte('matches').materialized(), () => filtered(db, scope, filter).select(['id', key.as('sort_key')]).limit(cap + 1))
    .with('page', (qb) => qb.selectFrom('matches').select(['id', 'sort_key']).orderBy(sql`sort_key ${direction}, id ${direction}`).limit(page.limit + 1))
    .selectFrom('sources')
    .innerJoin('page', 'page.id', 'sources.id')
    .select((eb) => [
      sql<string>`(SELECT count(*) FROM matches)`.as('matched'),
      'sources.id', 'feature_id', 'organisation', 'area_m2', ...sourceColumns(eb.ref('sources.id'), eb.ref('geom'), eb.ref('period'), eb.ref('created_at'))
    ])
    .orderBy(sql`page.sort_key ${direction}, page.id ${direction}`)
    .execute()
  const matched = Number(rows[0]?.matched ?? 0)
  if (matched > cap) return { rows: await listSources(db, scope, filter, page), matched: undefined }
  return { rows: rows.map(({ matched: _, ...row }) => row), matched }
}

export interface SourcesExtent { bbox: [number, number, number, number] | null, interval: [string | null, string | null] }

/** The bounding box and time span of the sources in a scope (nulls when there are none). */
export async function sourcesExtent (db: Db, scope: Scope): Promise<SourcesExtent> {
  const row = await filtered(db, scope, {})
    .select([
      sql<number | null>`ST_XMin(ST_Extent(geom))`.as('xmin'), sql<number | null>`ST_YMin(ST_Extent(geom))`.as('ymin'),
      sql<number | null>`ST_XMax(ST_Extent(geom))`.as('xmax'), sql<number | null>`ST_YMax(ST_Extent(geom))`.as('ymax'),
      isoUtc(sql`min(lower(period))`).as('start'), isoUtc(sql`max(upper(period))`).as('end')
    ])
    .executeTakeFirstOrThrow()
  const bbox = row.xmin === null || row.ymin === null || row.xmax === null || row.ymax === null ? null : [row.xmin, row.ymin, row.xmax, row.ymax] as [number, number, number, number]
  return { bbox, interval: [row.start, row.end] }
}

// The conflict tolerance lives in the database (source_conflict_settings), since every stored
// pair was computed with it; CONFLICT_TOLERANCE_M is applied by migrate.

/** The tolerance the database's conflicts were computed with (undefined before sql/008). */
export async function storedConflictTolerance (db: Db): Promise<number | undefined> {
  const { rows } = await sql<{ t: number | null }>`SELECT CASE WHEN to_regclass('source_conflict_settings') IS NOT NULL THEN sources_conflict_tolerance_m() END AS t`.execute(db)
  return rows[0]?.t ?? undefined
}

/** Sets the tolerance; when it changed, every pair is computed again (their number is returned). */
export async function applyConflictTolerance (db: Db, metres: number): Promise<{ changed: false } | { changed: true, pairs: number }> {
  const { rows } = await sql<{ pairs: string | null }>`SELECT sources_set_conflict_tolerance(${metres}::float8) AS pairs`.execute(db)
  const pairs = rows[0]?.pairs ?? null
  return pairs === null ? { changed: false } : { changed: true, pairs: Number(pairs) }
}
