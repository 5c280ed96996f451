// Listing (OGC API – Features items): filters, a stable order and keyset paging. Each query is
// built from one ListInput, by a function of (db, input) alone: whether a filter is present, the
// sort and the number of boxes decide its SQL text, and every string and number in the input is
// a parameter, so the store compiles each shape once (db/compiled-query.ts compileByShape).
import { type Compilable, type RawBuilder, sql } from 'kysely'
import type { Db, Scope } from '../db/database.js'
import { isoUtc } from '../db/postgis.js'
import { type BinaryRows, canCopy, copyBinary, inlineParameters } from '../db/copy-binary.js'
import { INNER_MARGIN, type SearchBox } from './search-box.js'
import { FILTER_SHAPE_KEYS, type FilterExpr, attributeValue, filterSql, hasSpatial } from './filter.sql.js'
import type { AttributeType } from './attribute-schemas.js'
import { type FeatureOutput, attributeMembers, conflictSummary, conflictsJoin, conflictsJoinAll, featureColumns, featureText, property, sourceRow, valueOf } from './source-properties.js'

/** A sortable property's name (source-properties.ts SORTABLE). */
export type SortField = string

/**
 * One key of an order; a listing's order always ends with id (its last key), so that it is total.
 * With `as`, the key is a declared attribute of that type (its index's expression), which may be
 * NULL: NULL sorts after every value ascending and before them descending (PostgreSQL's default,
 * the order its expression index is read in), and the keyset condition says so (afterPosition).
 */
export interface SortKey { field: SortField, descending: boolean, as?: AttributeType }

/** A cursor's position: the sort values of all keys but id (null: an attribute's NULL). */
export type SortValues = Array<string | null>

/** The `sources` relation of a listing's queries. */
const ROW = sourceRow('sources')

export interface ListFilter {
  /** A bbox as one box, or two when it crosses the antimeridian (searchBoxes). */
  boxes?: SearchBox[]
  /** An instant (start_at ≤ at < end_at) or a closed interval with open ends allowed; ISO 8601. */
  datetime?: { at?: string, from?: string, to?: string }
  organisation?: string
  /** A CQL2 filter, checked (features/filters/cql2.ts), and the queryables given as parameters (features.query.ts). */
  expr?: FilterExpr
  /** A bbox in a projected CRS (bbox-crs): its corners in x = east, y = north of that CRS's SRID. */
  projectedBox?: { srid: number, minX: number, minY: number, maxX: number, maxY: number }
}

export interface ListPage {
  /** The order: keys, the last of them id (sortOrder). */
  sort: SortKey[]
  /** The sort values (all keys but id) and id of the last row already seen. */
  after?: { values: SortValues, id: string }
  /** The id of the last source a bulk export's range holds (rangeFeaturesQuery, which reads in id order only). */
  until?: string
  limit: number
  /** How many ranges of `limit` a bulk export's rangeBoundsQuery cuts (RANGES_PER_CUT when absent). */
  ranges?: number
}

/** One listing query: who asks, what matches, which page, how its Features are written; `cap` bounds numberMatched. */
export interface ListInput { scope: Scope, filter: ListFilter, page: ListPage, cap: number, output?: FeatureOutput }

/** The keys of a ListInput whose values decide the SQL text rather than being parameters (the output's CRS and properties among them). */
export const LIST_INPUT_SHAPE_KEYS = ['scope', 'field', 'srid', 'properties', ...FILTER_SHAPE_KEYS]

/**
 * The order of `keys` made total: the keys up to id, then id (in the last key's direction, or
 * ascending when none is given). Keys after id change nothing, so they are dropped.
 */
export function sortOrder (keys: readonly SortKey[]): SortKey[] {
  const upToId = keys.findIndex((k) => k.field === 'id')
  if (upToId >= 0) return keys.slice(0, upToId + 1)
  return [...keys, { field: 'id', descending: keys.at(-1)?.descending ?? false }]
}

/** The SQL type of a sort key, which a cursor's value is cast to. */
const SORT_CASTS: Record<string, RawBuilder<unknown>> = { string: sql`::text`, timestamp: sql`::timestamptz`, integer: sql`::int8`, number: sql`::float8`, boolean: sql`::boolean` }

/** A sort key's type: its property's, or its declared attribute's. */
export const keyType = (k: SortKey): string => k.as ?? property(k.field).type

/** A sort key's value in a row of `sources`. */
const keyValue = (k: SortKey): RawBuilder<unknown> => k.as !== undefined ? attributeValue({ attribute: k.field, as: k.as }, ROW.attributes) : k.field === 'id' ? sql.ref('id') : valueOf(k.field, ROW)

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
  /** The last one's sort values (all keys but id) as a JSON array of strings. */
  last_sort_values: string | null
  last_id: string | null
}

/** A sort key's value as a cursor keeps it: the API's own string for it. */
function sortValue (k: SortKey): RawBuilder<string> {
  const value = keyValue(k)
  return keyType(k) === 'timestamp' ? isoUtc(value) : sql<string>`(${value})::text`
}

/** The sort values of a row (all keys but id) as JSON text: what a cursor keeps. */
function sortValues (page: ListPage): RawBuilder<string> {
  const keys = page.sort.slice(0, -1)
  return keys.length === 0 ? sql<string>`'[]'::text` : sql<string>`json_build_array(${sql.join(keys.map(sortValue))})::text`
}

function envelope (west: unknown, south: unknown, east: unknown, north: unknown, margin = 0) {
  if (margin === 0) return sql`ST_MakeEnvelope(${west}::float8, ${south}::float8, ${east}::float8, ${north}::float8, 4326)`
  const m = sql.lit(margin)
  return sql`ST_MakeEnvelope(${west}::float8 + ${m}, ${south}::float8 + ${m}, ${east}::float8 - ${m}, ${north}::float8 - ${m}, 4326)`
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
  const { boxes, datetime } = filter
  // The query's envelope is transformed, never the column, so sources_geom_gist decides.
  if (boxes !== undefined) q = q.where(({ or }) => or(boxes.map(intersectsBox)))
  if (datetime?.at !== undefined) q = q.where(sql<boolean>`period @> ${datetime.at}::timestamptz`)
  else if (datetime?.from !== undefined || datetime?.to !== undefined) {
    q = q.where(sql<boolean>`period && tstzrange(${datetime.from ?? null}::timestamptz, ${datetime.to ?? null}::timestamptz, '[]')`)
  }
  if (filter.expr !== undefined) q = q.where(filterSql(filter.expr, intersectsBox))
  const box = filter.projectedBox
  if (box !== undefined) {
    // The box is drawn in its own CRS, its edges densified (64 points a side) so that their curve
    // in longitude/latitude is followed, then transformed: the query's shape, never the column.
    const projected = sql`ST_Transform(ST_Segmentize(ST_MakeEnvelope(${box.minX}::float8, ${box.minY}::float8, ${box.maxX}::float8, ${box.maxY}::float8, ${box.srid}::int),
      greatest(${box.maxX}::float8 - ${box.minX}::float8, ${box.maxY}::float8 - ${box.minY}::float8) / 64), 4326)`
    q = q.where(sql<boolean>`(geom && ${projected} AND ST_Intersects(geom, ${projected}))`)
  }
  return q
}

const directionOf = (k: SortKey) => k.descending ? sql`DESC` : sql`ASC`

/** The sort keys but id, as the columns sort_0, sort_1, … of the chosen ids. */
const sortColumns = (page: ListPage) => page.sort.slice(0, -1).map((k, i) => keyValue(k).as(`sort_${i}`))

/** ORDER BY of the listing's rows: each key's value, then id. */
const rowOrder = (page: ListPage) => sql.join(page.sort.map((k) => sql`${keyValue(k)} ${directionOf(k)}`))

/**
 * ORDER BY over the chosen ids (`sort_0`, …, `id`) of a page, with `prefix` their relation's
 * name and dot. Sorted by id alone, the order is id's, which matches the order the rows come in.
 */
function keyOrder (prefix: '' | 'page.', { sort }: ListPage): RawBuilder<unknown> {
  return sql.join(sort.map((k, i) => sql`${sql.raw(`${prefix}${i === sort.length - 1 ? 'id' : `sort_${i}`}`)} ${directionOf(k)}`))
}

/**
 * The rows after a cursor's position in the page's order. All keys in one direction: one row
 * comparison, which an index on the keys serves; mixed directions: the expanded form
 * (k1 > v1 OR k1 = v1 AND (k2 < v2 OR …)).
 */
function afterPosition (page: ListPage, after: { values: SortValues, id: string }): RawBuilder<boolean> {
  const terms = page.sort.map((k, i) => {
    const isId = i === page.sort.length - 1
    const v = isId ? after.id : after.values[i] ?? null
    const value = isId ? sql`${after.id}::text` : sql`${v}${SORT_CASTS[keyType(k)] ?? sql``}`
    return { column: keyValue(k), value, descending: k.descending, nullable: k.as !== undefined, isNull: v === null }
  })
  const first = terms[0]
  if (first !== undefined && terms.every((t) => t.descending === first.descending && !t.nullable)) {
    const columns = sql.join(terms.map((t) => t.column))
    const values = sql.join(terms.map((t) => t.value))
    return first.descending ? sql<boolean>`(${columns}) < (${values})` : sql<boolean>`(${columns}) > (${values})`
  }
  let condition: RawBuilder<boolean> = sql<boolean>`false`
  for (const t of [...terms].reverse()) {
    if (!t.nullable) {
      const beyond = t.descending ? sql`${t.column} < ${t.value}` : sql`${t.column} > ${t.value}`
      condition = sql<boolean>`(${beyond} OR (${t.column} = ${t.value} AND ${condition}))`
    } else if (t.isNull) {
      // NULL is the last value ascending, the first descending.
      condition = t.descending
        ? sql<boolean>`(${t.column} IS NOT NULL OR ${condition})`
        : sql<boolean>`(${t.column} IS NULL AND ${condition})`
    } else {
      condition = t.descending
        ? sql<boolean>`(${t.column} < ${t.value} OR (${t.column} = ${t.value} AND ${condition}))`
        : sql<boolean>`(${t.column} > ${t.value} OR ${t.column} IS NULL OR (${t.column} = ${t.value} AND ${condition}))`
    }
  }
  return condition
}

/** LIMIT n + 1 with n a parameter (the extra row says there is more). */
const plusOne = (n: number) => sql<number>`${n}::int8 + 1`

/**
 * A page as one ListedPage row. Its ids are chosen first (page.limit + 1 of them: the extra one
 * says there is a next page) and only their rows are formatted: GeoJSON and dates are not made
 * for the thousands of matches a sort passes over.
 */
export function listPageQuery (db: Db, input: ListInput) {
  const { page, output } = input
  return compilable(db, aggregatedPage(pageSources(pageChoice(db, input, plusOne(page.limit)), page), page, output))
}

/** A page's ids and sort values, the first `limit` of them in the page's order (listPageQuery's choice). */
function pageChoice (db: Db, { scope, filter, page }: ListInput, limit: RawBuilder<number>): RawBuilder<unknown> {
  let ids = filtered(db, scope, filter).select(['id', ...sortColumns(page)])
  const after = page.after
  if (after !== undefined) ids = ids.where(afterPosition(page, after))
  // The constant bound lets the generic plan of this prepared statement know that the page is
  // small (the limit is a parameter it cannot see): without it, it joins the page to `sources`
  // by a hash over a sequential scan of the whole table.
  // The outer order is one the planner sees the bounded rows already come in (keyOrder), so the
  // outer LIMIT stops the scan after limit + 1 rows. Written as ORDER BY sort_key, id when
  // sorting by id, it would sort all of them (up to 10,001) whenever it expected few rows, as
  // for the rows after a cursor in one organisation (test/sources/list-plan.test.ts).
  const bounded = ids.orderBy(rowOrder(page)).limit(sql.lit(PAGE_ROWS_MAX))
  return sql`(SELECT * FROM (${bounded}) AS bounded ORDER BY ${keyOrder('', page)} LIMIT ${limit})`
}

/** How many ranges one rangeBoundsQuery cuts at most (page.ranges): at most this many times page.limit ids per statement. */
export const RANGES_PER_CUT = 500

/**
 * The ends of the next RANGES_PER_CUT ranges of page.limit matching sources after page.after's
 * id, in id order: every page.limit-th id of the next RANGES_PER_CUT × page.limit matches, and how
 * many of those there were (fewer: the matches end there). A bulk export reads the ranges over
 * several connections at once (features.pager.ts rangeChunks). No Feature is made, and each
 * statement reads a bounded number of ids, however many match.
 */
export function rangeBoundsQuery (db: Db, { scope, filter, page }: ListInput) {
  let ids = filtered(db, scope, filter).select('id')
  if (page.after !== undefined) ids = ids.where('id', '>', page.after.id)
  const cut = ids.orderBy('id').limit(sql<number>`${page.limit}::int8 * least(${page.ranges}::int8, ${sql.lit(RANGES_PER_CUT)})`)
  return compilable(db, sql<{ bounds: string[] | null, cut: string }>`SELECT array_agg(id ORDER BY id) FILTER (WHERE n % ${page.limit}::int8 = 0) AS bounds, count(*) AS cut
    FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM (${cut}) AS cut) AS numbered`)
}

/**
 * A range of a bulk export (features.pager.ts rangeChunks): the matches after page.after's id up
 * to page.until (page.limit + 1 of them: the extra one says there is more), each with its Feature
 * text, in id order; page.sort is not read. One row a Feature, and nothing of the items page's
 * statement that an export does not use (the join back to `sources` after choosing the ids, the
 * row numbers, the sorts of the aggregates), which made the Feature texts cost PostgreSQL more
 * (docs/performance.md, the export's ranges).
 */
export function rangeFeaturesQuery (db: Db, input: ListInput) {
  return compilable(db, rangeSelect<{ id: string, feature: string }>(db, input, sql`${featureText(ROW, conflictSummary('conflicts'), input.output)} AS feature`))
}

/** A range's sources as rangeFeaturesQuery reads them, each with its Feature's parts as columns (source-properties.ts featureColumns). */
export function rangeRowsQuery (db: Db, input: ListInput, binary = false) {
  return compilable(db, rangeSelect<FeatureRow>(db, input, featureColumns(ROW, conflictSummary('conflicts'), input.output, binary)))
}

/** A range's statement: its sources (page.limit + 1 of them), chosen once, with their conflicts (conflictsJoinAll), the id and `columns` of each. */
function rangeSelect<O> (db: Db, { scope, filter, page }: ListInput, columns: RawBuilder<unknown>): RawBuilder<O> {
  let rows = filtered(db, scope, filter).selectAll('sources')
  if (page.after !== undefined) rows = rows.where('id', '>', page.after.id)
  if (page.until !== undefined) rows = rows.where('id', '<=', page.until)
  const chosen = rows.orderBy('id').limit(plusOne(page.limit))
  return sql<O>`WITH chosen AS MATERIALIZED (${chosen})
    SELECT sources.id, ${columns} FROM chosen AS sources ${conflictsJoinAll(ROW.id, 'chosen', 'conflicts')} ORDER BY sources.id`
}

/**
 * A source as rangeRowsQuery reads it: its id, its geometry as WKB, each returned property under
 * its own name (featureColumns), and its attributes as a JSON object's text (null: none).
 */
export interface FeatureRow { id: string, geometry_wkb: Buffer, attributes_json: string | null, [property: string]: unknown }

/** No page reads more rows than this: a limit of at most 10,000 (MAX_LIMIT), and one more. */
const PAGE_ROWS_MAX = 10_001

/** A raw statement, compiled for the database it will run on. */
const compilable = <O>(db: Db, query: RawBuilder<O>): Compilable<O> => ({ compile: () => query.compile(db) })

/** The sources of a page (ids and sort keys, limit + 1 of them), numbered n in the page's order. */
function pageSources (page: RawBuilder<unknown>, listPage: ListPage) {
  // Every column: the properties' values are computed from them (source-properties.ts).
  return sql`SELECT s.*, row_number() OVER (ORDER BY ${keyOrder('page.', listPage)}) AS n
    FROM sources AS s JOIN ${page} AS page ON page.id = s.id`
}

/** A page's sources (pageSources) as one ListedPage; the extra row only says there is more. */
function aggregatedPage (rows: RawBuilder<unknown>, page: ListPage, output: FeatureOutput | undefined, more: RawBuilder<unknown> = sql``) {
  const shown = sql`sources.n <= ${page.limit}`
  const lastOf = (value: RawBuilder<string>) => sql`(array_agg(${value} ORDER BY sources.n DESC) FILTER (WHERE ${shown}))[1]`
  return sql<ListedPage>`SELECT string_agg(${featureText(ROW, conflictSummary('conflicts'), output)}, ',' ORDER BY sources.n) FILTER (WHERE ${shown}) AS features,
    count(*) FILTER (WHERE ${shown}) AS returned, count(*) > ${page.limit} AS more,
    ${lastOf(sortValues(page))} AS last_sort_values, ${lastOf(sql`sources.id`)} AS last_id${more}
    FROM (${rows}) AS sources ${conflictsJoin(ROW.id, 'conflicts')}`
}

/** The number of matching sources up to cap + 1 (more than cap: too many to count cheaply). */
export function countQuery (db: Db, { scope, filter, cap }: ListInput) {
  const inner = filtered(db, scope, filter).select(sql`1`.as('one')).limit(plusOne(cap))
  return db.selectFrom(inner.as('matching')).select((eb) => eb.fn.countAll<string>().as('n'))
}

/**
 * A first page with a bbox, in one statement: the matches (id and sort key, up to cap + 1) are
 * found once, counted, and the page is chosen among them. The exact spatial test reads every
 * match's row anyway, so this is one spatial scan instead of two.
 */
export function countedPageQuery (db: Db, { scope, filter, page, cap, output }: ListInput) {
  const matches = filtered(db, scope, filter).select(['id', ...sortColumns(page)]).limit(plusOne(cap))
  return compilable(db, sql<ListedPage & { matched: string }>`WITH matches AS MATERIALIZED (${matches}),
    page AS (SELECT * FROM matches ORDER BY ${keyOrder('', page)} LIMIT ${plusOne(page.limit)})
    ${aggregatedPage(pageSources(sql`page`, page), page, output, sql`, (SELECT count(*) FROM matches) AS matched`)}`)
}

/** Runs a listing query built by one of the functions above (sources.store.ts compiles each once per shape). */
export type RunListing = <O>(build: (db: Db, input: ListInput) => Compilable<O>, input: ListInput) => Promise<O[]>

/** A page (listPageQuery). */
export async function listSources (run: RunListing, input: ListInput): Promise<ListedPage> {
  if (input.page.limit >= PAGE_ROWS_MAX) throw new RangeError(`a page holds at most ${PAGE_ROWS_MAX - 1} rows`)
  return (await run(listPageQuery, input))[0] as ListedPage
}

/**
 * A first page (no cursor) and the number of matching sources (undefined beyond `cap`).
 * - With a bbox or a spatial filter, in one statement (countedPageQuery).
 * - Otherwise the page, then (only when there is more than one page) the count, which
 *   sources_organisation_period_gist answers from the index alone.
 */
export async function listFirstSources (run: RunListing, input: ListInput): Promise<{ page: ListedPage, matched: number | undefined }> {
  const { filter, cap } = input
  if (filter.boxes === undefined && filter.projectedBox === undefined && (filter.expr === undefined || !hasSpatial(filter.expr))) {
    const page = await listSources(run, input)
    if (!page.more) return { page, matched: Number(page.returned) }
    return { page, matched: await countSources(run, input) }
  }
  const { matched, ...page } = (await run(countedPageQuery, input))[0] as ListedPage & { matched: string }
  if (Number(matched) > cap) return { page: await listSources(run, input), matched: undefined }
  return { page, matched: Number(matched) }
}

/** The ends of a bulk export's next ranges, and whether matches go on after the last of them (rangeBoundsQuery). */
export async function rangeBounds (run: RunListing, input: ListInput): Promise<{ bounds: string[], more: boolean }> {
  const ranges = Math.min(input.page.ranges ?? RANGES_PER_CUT, RANGES_PER_CUT)
  const row = (await run(rangeBoundsQuery, { ...input, page: { ...input.page, ranges } }))[0]
  return { bounds: row?.bounds ?? [], more: Number(row?.cut ?? 0) === input.page.limit * ranges }
}

/** An attribute of the matching sources and the JSON types of its values (attributeTypesQuery). */
export interface AttributeTypes { name: string, types: string[] }

/**
 * The attributes the matching sources' Features hold (those `properties=` names, when it does):
 * each name and the JSON types of its values (jsonb_typeof), in the order a reader of the export
 * meets them (the first source in id order holding it, then jsonb's own key order). A bulk
 * export's CSV and FlatGeobuf columns, known before their first row; one pass over the matches.
 */
export function attributeTypesQuery (db: Db, { scope, filter, output }: ListInput) {
  return attributeTypesOf(db, sql`(SELECT s.id AS n, s.attributes FROM (${filtered(db, scope, filter).selectAll('sources')}) AS s)`, output)
}

/** The same for the sources of one page (its first page.limit, in its order): a streamed CSV or FlatGeobuf page's columns. */
export function pageAttributeTypesQuery (db: Db, input: ListInput) {
  return attributeTypesOf(db, sql`(${pageSources(pageChoice(db, input, sql<number>`${input.page.limit}::int8`), input.page)})`, input.output)
}

/** The attributes of `rows` (each with its attributes and n, its place in the reader's order) and the JSON types of their values. */
function attributeTypesOf (db: Db, rows: RawBuilder<unknown>, output: FeatureOutput | undefined) {
  const members = attributeMembers(ROW.attributes, output?.properties)
  if (members === undefined) return compilable(db, sql<AttributeTypes>`SELECT NULL::text AS name, NULL::text[] AS types WHERE false`)
  return compilable(db, sql<AttributeTypes>`SELECT a.key AS name, array_agg(DISTINCT jsonb_typeof(a.value) ORDER BY jsonb_typeof(a.value)) AS types
    FROM ${rows} AS sources CROSS JOIN LATERAL ${members} AS a
    GROUP BY a.key ORDER BY min(sources.n), octet_length(a.key), a.key COLLATE "C"`)
}

/**
 * The attributes of the matching sources (attributeTypesQuery), in a transaction of its own with
 * JIT off: compiling this one pass over every match took PostgreSQL longer than the pass itself
 * (docs/performance.md, the bulk export).
 */
export async function attributeTypes (db: Db, input: ListInput): Promise<AttributeTypes[]> {
  return await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL jit = off`.execute(trx)
    return (await trx.executeQuery(attributeTypesQuery(trx, input))).rows
  })
}

/** What one query of a bulk export's range read: its Features (rangeFeaturesQuery's texts, comma-joined, or rangeRowsQuery's rows; null: none). */
export interface RangePage<T = string> { features: T | null, returned: number, more: boolean, lastId: string | null }

/** The range's rows, limit + 1 of them read: those shown, and whether more follow. */
function rangePage<R extends { id: string }, T> (rows: R[], limit: number, features: (shown: R[]) => T): RangePage<T> {
  const more = rows.length > limit
  const shown = more ? rows.slice(0, limit) : rows
  return { features: shown.length === 0 ? null : features(shown), returned: shown.length, more, lastId: shown.at(-1)?.id ?? null }
}

/** A range's next Features (rangeFeaturesQuery), comma-joined as a page's. */
export async function listRange (run: RunListing, input: ListInput): Promise<RangePage> {
  return rangePage(await run(rangeFeaturesQuery, input), input.page.limit, (shown) => shown.map((r) => r.feature).join(','))
}

/** A range's next sources, their Features in parts (rangeRowsQuery). */
export async function listRangeRows (run: RunListing, input: ListInput): Promise<RangePage<FeatureRow[]>> {
  return rangePage(await run(rangeRowsQuery, input), input.page.limit, (shown) => shown)
}

/** Whether a range's sources can be read by binary COPY (listRangeBinary): a server backend, and the range's parameters inlinable. */
export function canCopyRanges (db: Db, input: ListInput): boolean {
  if (!canCopy(db)) return false
  const { sql: text, parameters } = rangeRowsQuery(db, input, true).compile()
  return inlineParameters(text, parameters) !== undefined
}

/**
 * A range's next sources as rangeRowsQuery's binary form through COPY (canCopyRanges): field 0
 * the id, 1 the WKB, then featureColumns' in binary, the row read beyond the limit left out.
 */
export async function listRangeBinary (db: Db, input: ListInput): Promise<RangePage<BinaryRows>> {
  const rows = await copyBinary(db, rangeRowsQuery(db, input, true).compile())
  const more = rows.count > input.page.limit
  if (more) rows.count = input.page.limit
  const last = rows.count - 1
  const lastId = last < 0 ? null : rows.data.toString('utf8', rows.starts[last * rows.fields] as number, (rows.starts[last * rows.fields] as number) + (rows.lengths[last * rows.fields] as number))
  return { features: rows.count === 0 ? null : rows, returned: rows.count, more, lastId }
}

/** The number of matching sources, undefined beyond `cap` (countQuery). */
export async function countSources (run: RunListing, input: ListInput): Promise<number | undefined> {
  const n = Number((await run(countQuery, input))[0]?.n)
  return n > input.cap ? undefined : n
}

export interface SourcesExtent { bbox: [number, number, number, number] | null, interval: [string | null, string | null] }

/** The bounding box and time span of the sources in a scope (nulls when there are none). */
export async function sourcesExtent (db: Db, scope: Scope): Promise<SourcesExtent> {
  const row = await filtered(db, scope, {})
    .select([
      sql<number | null>`ST_XMin(ST_Extent(geom))`.as('xmin'), sql<number | null>`ST_YMin(ST_Extent(geom))`.as('ymin'),
      sql<number | null>`ST_XMax(ST_Extent(geom))`.as('xmax'), sql<number | null>`ST_YMax(ST_Extent(geom))`.as('ymax'),
      isoUtc(sql`min(${valueOf('start_at', ROW)})`).as('start'), isoUtc(sql`max(${valueOf('end_at', ROW)})`).as('end')
    ])
    .executeTakeFirstOrThrow()
  const bbox = row.xmin === null || row.ymin === null || row.xmax === null || row.ymax === null ? null : [row.xmin, row.ymin, row.xmax, row.ymax] as [number, number, number, number]
  return { bbox, interval: [row.start, row.end] }
}
