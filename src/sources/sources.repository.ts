// SQL for sources, as plain functions that take the database (or a transaction) first and own
// no batching and no transaction: the caller decides. Writes are one set-based INSERT … SELECT
// FROM unnest(…) for any number of features and requests, so a collection is atomic and costs
// one round trip; its polygons travel as one binary EWKB MultiPolygon that ST_Dump splits back
// into rows, in order. When the database rejects a write, diagnoseSources evaluates each
// constraint per feature (sources/rejections.ts says which one failed).
import { type Compilable, type Expression, type Kysely, type RawBuilder, type Transaction, sql } from 'kysely'
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

/** A timestamptz as the API's date-time (isoUtc), as JSON text. */
const isoJson = (ts: RawBuilder<unknown> | Expression<unknown>) => sql<string>`'"' || ${isoUtc(ts)} || '"'`

/**
 * The GeoJSON Feature of the `sources` row in scope, as JSON text made by PostgreSQL: the same
 * Feature, field for field and in the same order, as featureJson (source-feature.ts) makes from
 * a SourceRow for GET /sources/?id= (test/sources/conflicts.test.ts compares them, conflicts and
 * conflicts_total included). Listings use it,
 * so that the service reads one column per feature instead of parsing nine and serialising them
 * again. Numbers are float8out's shortest exact form, as JavaScript's.
 */
function featureText () {
  const conflict = sql<string>`'{"id":' || to_json(c.other_id) || ',"overlap_m2":' || c.overlap_m2 || ',"overlap_ratio":' || c.overlap_ratio
    || ',"overlap_start":' || ${isoJson(sql`lower(c.overlap_period)`)} || ',"overlap_end":' || ${isoJson(sql`upper(c.overlap_period)`)} || '}'`
  const conflicts = sql<string>`COALESCE((SELECT ',"conflict":true,"conflicts":[' || string_agg(${conflict}, ',' ORDER BY c.overlap_m2 DESC, c.other_id) || ']'
      || CASE WHEN count(*) = ${sql.lit(CONFLICTS_LISTED)} THEN (SELECT CASE WHEN count(*) > ${sql.lit(CONFLICTS_LISTED)} THEN ',"conflicts_total":' || count(*) ELSE '' END
        FROM source_conflict_pairs AS p WHERE p.source_id = sources.id) ELSE '' END
    FROM (SELECT p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period FROM source_conflict_pairs AS p
      WHERE p.source_id = sources.id ORDER BY p.overlap_m2 DESC, p.other_id LIMIT ${sql.lit(CONFLICTS_LISTED)}) AS c
    HAVING count(*) > 0), ',"conflict":false,"conflicts":[]')`
  return sql<string>`'{"type":"Feature","id":' || to_json(sources.id) || ',"geometry":' || ${stAsGeoJson(sql`sources.geom`)}
    || ',"properties":{"feature_id":' || to_json(sources.feature_id) || ',"start_at":' || ${isoJson(sql`lower(sources.period)`)}
    || ',"end_at":' || ${isoJson(sql`upper(sources.period)`)} || ',"created_at":' || ${isoJson(sql`sources.created_at`)}
    || ',"organisation":' || to_json(sources.organisation) || ',"area_m2":' || sources.area_m2 || ${conflicts} || '}}'`
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

// Listing (OGC API – Features items): filters, a stable order and keyset paging. Each query is
// built from one ListInput, by a function of (db, input) alone: whether a filter is present, the
// sort and the number of boxes decide its SQL text, and every string and number in the input is
// a parameter, so src/fast compiles each shape once (compileByShape).

export type SortField = 'id' | 'created_at' | 'start_at' | 'end_at'

/**
 * A query box in CRS84, never across the antimeridian (searchBoxes splits one that is).
 * `shortcut`: wide enough for the inner-box shortcut (intersectsBox).
 */
export interface SearchBox { west: number, south: number, east: number, north: number, shortcut: boolean }

export interface ListFilter {
  /** A bbox as one box, or two when it crosses the antimeridian (searchBoxes). */
  boxes?: SearchBox[]
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

/** One listing query: who asks, what matches, which page; `cap` bounds numberMatched. */
export interface ListInput { scope: Scope, filter: ListFilter, page: ListPage, cap: number }

/** The keys of a ListInput whose (string) values decide the SQL text rather than being parameters. */
export const LIST_INPUT_SHAPE_KEYS = ['scope', 'field']

const SORT_EXPRESSIONS: Record<SortField, RawBuilder<string>> = {
  id: sql<string>`id`,
  created_at: sql<string>`created_at`,
  start_at: sql<string>`lower(period)`,
  end_at: sql<string>`upper(period)`
}

/**
 * A page of a listing as one row: its Features as JSON text joined by commas (null when none),
 * how many, whether more follow, and the sort value (the API's own string for it) and id of the
 * last one, which a cursor keeps. One row, one string: the service splices it into the response
 * without parsing a row per feature.
 */
export interface ListedPage {
  features: string | null
  returned: string
  more: boolean
  last_sort_value: string | null
  last_id: string | null
}

const SORT_VALUES: Record<SortField, RawBuilder<string>> = {
  id: sql<string>`sources.id`,
  created_at: isoUtc(sql`sources.created_at`),
  start_at: isoUtc(sql`lower(sources.period)`),
  end_at: isoUtc(sql`upper(sources.period)`)
}

function envelope (west: unknown, south: unknown, east: unknown, north: unknown, margin = 0) {
  if (margin === 0) return sql`ST_MakeEnvelope(${west}::float8, ${south}::float8, ${east}::float8, ${north}::float8, 4326)`
  const m = sql.lit(margin)
  return sql`ST_MakeEnvelope(${west}::float8 + ${m}, ${south}::float8 + ${m}, ${east}::float8 - ${m}, ${north}::float8 - ${m}, 4326)`
}

// A shortcut for the exact test: a source whose bounding box lies inside the query box
// intersects it, without ST_Intersects. Bounding boxes are float4, rounded outward by up to
// 1.1e-5° at ±180, so the shortcut uses the box shrunk by 1e-4°; sources near its edge get the
// exact test. Halves the cost of a dense window (bench/NOTES.md).
const INNER_MARGIN = 1e-4

/** The boxes of a bbox (CRS84; west > east crosses the antimeridian: two boxes). */
export function searchBoxes (west: number, south: number, east: number, north: number): SearchBox[] {
  const box = (w: number, e: number): SearchBox => ({ west: w, south, east: e, north, shortcut: e - w > 2 * INNER_MARGIN && north - south > 2 * INNER_MARGIN })
  return west <= east ? [box(west, east)] : [box(west, 180), box(-180, east)]
}

function intersectsBox ({ west, south, east, north, shortcut }: SearchBox) {
  const box = envelope(west, south, east, north)
  const exact = sql<boolean>`ST_Intersects(geom, ${box})`
  if (!shortcut) return sql<boolean>`(geom && ${box} AND ${exact})`
  return sql<boolean>`(geom && ${box} AND (geom @ ${envelope(west, south, east, north, INNER_MARGIN)} OR ${exact}))`
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
  const { boxes, datetime } = filter
  // The query's envelope is transformed, never the column, so sources_geom_gist decides.
  if (boxes !== undefined) q = q.where(({ or }) => or(boxes.map(intersectsBox)))
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
 * ORDER BY over the chosen ids (`sort_key`, `id`) of a page, with `prefix` their relation's
 * name and dot. Sorted by id, sort_key is id under another name, which PostgreSQL does not see:
 * the order is then written as id alone, so that it matches the order the rows come in.
 */
function keyOrder (prefix: '' | 'page.', { sort }: ListPage): RawBuilder<unknown> {
  const direction = sort.descending ? sql`DESC` : sql`ASC`
  const [sortKey, id] = [sql.raw(`${prefix}sort_key`), sql.raw(`${prefix}id`)]
  return sort.field === 'id' ? sql`${id} ${direction}` : sql`${sortKey} ${direction}, ${id} ${direction}`
}

/** LIMIT n + 1 with n a parameter (the extra row says there is more). */
const plusOne = (n: number) => sql<number>`${n}::int8 + 1`

/**
 * A page as one ListedPage row. Its ids are chosen first (page.limit + 1 of them: the extra one
 * says there is a next page) and only their rows are formatted: GeoJSON and dates are not made
 * for the thousands of matches a sort passes over.
 */
export function listPageQuery (db: Db, { scope, filter, page }: ListInput) {
  const { key, direction } = pageOrder(page)
  let ids = filtered(db, scope, filter).select(['id', key.as('sort_key')])
  const after = page.after
  if (after !== undefined) {
    const cast = page.sort.field === 'id' ? sql`::text` : sql`::timestamptz`
    ids = page.sort.descending
      ? ids.where(sql<boolean>`(${key}, id) < (${after.value}${cast}, ${after.id}::text)`)
      : ids.where(sql<boolean>`(${key}, id) > (${after.value}${cast}, ${after.id}::text)`)
  }
  // The constant bound lets the generic plan of this prepared statement know that the page is
  // small (the limit is a parameter it cannot see): without it, it joined the page to `sources`
  // by a hash over a sequential scan of the whole table, 254 ms instead of 2.
  // The outer order is one the planner sees the bounded rows already come in (keyOrder), so the
  // outer LIMIT stops the scan after limit + 1 rows. With ORDER BY sort_key, id when sorting by
  // id, it sorted them: lazily (an incremental sort) when it expected many rows, but all of
  // them, up to 10,001, when it expected few, as it did for the rows after a cursor in one
  // organisation: 72 ms for each chunk of a streamed page of big polygons, 40.8 s a page.
  const bounded = ids.orderBy(sql`${key} ${direction}, id ${direction}`).limit(sql.lit(PAGE_ROWS_MAX))
  const chosen = sql`(SELECT * FROM (${bounded}) AS bounded ORDER BY ${keyOrder('', page)} LIMIT ${plusOne(page.limit)})`
  return compilable(db, aggregatedPage(pageSources(chosen, page), page))
}

/** No page reads more rows than this: a limit of at most 10,000 (MAX_LIMIT), and one more. */
const PAGE_ROWS_MAX = 10_001

/** A raw statement, compiled for the database it will run on. */
const compilable = <O>(db: Db, query: RawBuilder<O>): Compilable<O> => ({ compile: () => query.compile(db) })

/** The sources of a page (ids and sort keys, limit + 1 of them), numbered n in the page's order. */
function pageSources (page: RawBuilder<unknown>, listPage: ListPage) {
  return sql`SELECT s.id, s.feature_id, s.organisation, s.geom, s.period, s.created_at, s.area_m2,
      row_number() OVER (ORDER BY ${keyOrder('page.', listPage)}) AS n
    FROM sources AS s JOIN ${page} AS page ON page.id = s.id`
}

/** A page's sources (pageSources) as one ListedPage; the extra row only says there is more. */
function aggregatedPage (rows: RawBuilder<unknown>, page: ListPage, more: RawBuilder<unknown> = sql``) {
  const shown = sql`sources.n <= ${page.limit}`
  const lastOf = (value: RawBuilder<string>) => sql`(array_agg(${value} ORDER BY sources.n DESC) FILTER (WHERE ${shown}))[1]`
  return sql<ListedPage>`SELECT string_agg(${featureText()}, ',' ORDER BY sources.n) FILTER (WHERE ${shown}) AS features,
    count(*) FILTER (WHERE ${shown}) AS returned, count(*) > ${page.limit} AS more,
    ${lastOf(SORT_VALUES[page.sort.field])} AS last_sort_value, ${lastOf(sql`sources.id`)} AS last_id${more}
    FROM (${rows}) AS sources`
}

/** The number of matching sources up to cap + 1 (more than cap: too many to count cheaply). */
export function countQuery (db: Db, { scope, filter, cap }: ListInput) {
  const inner = filtered(db, scope, filter).select(sql`1`.as('one')).limit(plusOne(cap))
  return db.selectFrom(inner.as('matching')).select((eb) => eb.fn.countAll<string>().as('n'))
}

/**
 * A first page with a bbox, in one statement: the matches (id and sort key, up to cap + 1) are
 * found once, counted, and the page is chosen among them. The exact spatial test reads every
 * match's row anyway, so this is one spatial scan instead of two (1.8× the rate, bench/NOTES.md).
 */
export function countedPageQuery (db: Db, { scope, filter, page, cap }: ListInput) {
  const { key } = pageOrder(page)
  const matches = filtered(db, scope, filter).select(['id', key.as('sort_key')]).limit(plusOne(cap))
  return compilable(db, sql<ListedPage & { matched: string }>`WITH matches AS MATERIALIZED (${matches}),
    page AS (SELECT id, sort_key FROM matches ORDER BY ${keyOrder('', page)} LIMIT ${plusOne(page.limit)})
    ${aggregatedPage(pageSources(sql`page`, page), page, sql`, (SELECT count(*) FROM matches) AS matched`)}`)
}

/** Runs a listing query built by one of the functions above (plainly, or compiled once per shape). */
export type RunListing = <O>(build: (db: Db, input: ListInput) => Compilable<O>, input: ListInput) => Promise<O[]>

export const runPlain = (db: Db): RunListing => async (build, input) => (await db.executeQuery(build(db, input).compile())).rows

/** A page (listPageQuery). */
export async function listSources (run: RunListing, input: ListInput): Promise<ListedPage> {
  if (input.page.limit >= PAGE_ROWS_MAX) throw new RangeError(`a page holds at most ${PAGE_ROWS_MAX - 1} rows`)
  return (await run(listPageQuery, input))[0] as ListedPage
}

/**
 * A first page (no cursor) and the number of matching sources (undefined beyond `cap`).
 * - With a bbox, in one statement (countedPageQuery).
 * - Otherwise the page, then (only when there is more than one page) the count, which
 *   sources_organisation_period_gist answers from the index alone.
 */
export async function listFirstSources (run: RunListing, input: ListInput): Promise<{ page: ListedPage, matched: number | undefined }> {
  const { filter, cap } = input
  if (filter.boxes === undefined) {
    const page = await listSources(run, input)
    if (!page.more) return { page, matched: Number(page.returned) }
    const n = Number((await run(countQuery, input))[0]?.n)
    return { page, matched: n > cap ? undefined : n }
  }
  const { matched, ...page } = (await run(countedPageQuery, input))[0] as ListedPage & { matched: string }
  if (Number(matched) > cap) return { page: await listSources(run, input), matched: undefined }
  return { page, matched: Number(matched) }
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
