// Listing (OGC API – Features items): filters, a stable order and keyset paging. Each query is
// built from one ListInput, by a function of (db, input) alone: whether a filter is present, the
// sort and the number of boxes decide its SQL text, and every string and number in the input is
// a parameter, so the store compiles each shape once (db/compiled-query.ts compileByShape).
import { type Compilable, type RawBuilder, sql } from 'kysely'
import type { Db, Scope } from '../db/database.js'
import { isoUtc } from '../db/postgis.js'
import { INNER_MARGIN, type SearchBox } from './search-box.js'
import { FILTER_SHAPE_KEYS, type FilterExpr, filterSql, hasSpatial } from './filter.sql.js'
import { conflictSummary, conflictsJoin, featureText, property, sourceRow, valueOf } from './source-properties.js'

/** A sortable property's name (source-properties.ts SORTABLE). */
export type SortField = string

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
export const LIST_INPUT_SHAPE_KEYS = ['scope', 'field', ...FILTER_SHAPE_KEYS]

/** The SQL type of a sort key, which a cursor's value is cast to. */
const SORT_CASTS: Record<string, RawBuilder<unknown>> = { string: sql`::text`, timestamp: sql`::timestamptz`, integer: sql`::int8`, number: sql`::float8` }

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

/** A sort key's value as a cursor keeps it: the API's own string for it. */
function sortValue (field: SortField): RawBuilder<string> {
  const value = valueOf(field, ROW)
  return property(field).type === 'timestamp' ? isoUtc(value) : sql<string>`(${value})::text`
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
  return q
}

function pageOrder (page: ListPage) {
  const key = valueOf(page.sort.field, ROW)
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
    const cast = SORT_CASTS[property(page.sort.field).type]
    ids = page.sort.descending
      ? ids.where(sql<boolean>`(${key}, id) < (${after.value}${cast}, ${after.id}::text)`)
      : ids.where(sql<boolean>`(${key}, id) > (${after.value}${cast}, ${after.id}::text)`)
  }
  // The constant bound lets the generic plan of this prepared statement know that the page is
  // small (the limit is a parameter it cannot see): without it, it joins the page to `sources`
  // by a hash over a sequential scan of the whole table.
  // The outer order is one the planner sees the bounded rows already come in (keyOrder), so the
  // outer LIMIT stops the scan after limit + 1 rows. Written as ORDER BY sort_key, id when
  // sorting by id, it would sort all of them (up to 10,001) whenever it expected few rows, as
  // for the rows after a cursor in one organisation (test/sources/list-plan.test.ts).
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
  // Every column: the properties' values are computed from them (source-properties.ts).
  return sql`SELECT s.*, row_number() OVER (ORDER BY ${keyOrder('page.', listPage)}) AS n
    FROM sources AS s JOIN ${page} AS page ON page.id = s.id`
}

/** A page's sources (pageSources) as one ListedPage; the extra row only says there is more. */
function aggregatedPage (rows: RawBuilder<unknown>, page: ListPage, more: RawBuilder<unknown> = sql``) {
  const shown = sql`sources.n <= ${page.limit}`
  const lastOf = (value: RawBuilder<string>) => sql`(array_agg(${value} ORDER BY sources.n DESC) FILTER (WHERE ${shown}))[1]`
  return sql<ListedPage>`SELECT string_agg(${featureText(ROW, conflictSummary('conflicts'))}, ',' ORDER BY sources.n) FILTER (WHERE ${shown}) AS features,
    count(*) FILTER (WHERE ${shown}) AS returned, count(*) > ${page.limit} AS more,
    ${lastOf(sortValue(page.sort.field))} AS last_sort_value, ${lastOf(sql`sources.id`)} AS last_id${more}
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
export function countedPageQuery (db: Db, { scope, filter, page, cap }: ListInput) {
  const { key } = pageOrder(page)
  const matches = filtered(db, scope, filter).select(['id', key.as('sort_key')]).limit(plusOne(cap))
  return compilable(db, sql<ListedPage & { matched: string }>`WITH matches AS MATERIALIZED (${matches}),
    page AS (SELECT id, sort_key FROM matches ORDER BY ${keyOrder('', page)} LIMIT ${plusOne(page.limit)})
    ${aggregatedPage(pageSources(sql`page`, page), page, sql`, (SELECT count(*) FROM matches) AS matched`)}`)
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
  if (filter.boxes === undefined && (filter.expr === undefined || !hasSpatial(filter.expr))) {
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
      isoUtc(sql`min(${valueOf('start_at', ROW)})`).as('start'), isoUtc(sql`max(${valueOf('end_at', ROW)})`).as('end')
    ])
    .executeTakeFirstOrThrow()
  const bbox = row.xmin === null || row.ymin === null || row.xmax === null || row.ymax === null ? null : [row.xmin, row.ymin, row.xmax, row.ymax] as [number, number, number, number]
  return { bbox, interval: [row.start, row.end] }
}
