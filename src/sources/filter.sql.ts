// A checked filter expression (a CQL2 filter after features/filters/cql2.ts has typed it) and its
// SQL. The expression is plain data inside ListFilter: its operators, relations, property names
// and booleans are its shape (LIST_INPUT_SHAPE_KEYS: they decide the SQL text), every string and
// number in it is a bound parameter. Filters use the indexes by testing the column against a
// transformed query value, never the other way round: `geom && <literal>` before the exact
// spatial test (sources_geom_gist), `period && tstzrange(…)` before the exact temporal test
// (sources_period_gist).
import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../db/database.js'
import type { SearchBox } from './search-box.js'
import { propertiesWhere, sourceRow, valueOf } from './source-properties.js'

/** A queryable's type as a filter sees it. */
export type QueryableType = 'string' | 'number' | 'boolean' | 'timestamp' | 'geometry'

/** The queryables a filter may name (source-properties.ts), and the type of each. */
export const QUERYABLE_TYPES: Readonly<Record<string, QueryableType>> = Object.freeze(Object.fromEntries(propertiesWhere((p) => p.queryable)
  .map(([name, p]) => [name, p.type === 'integer' || p.type === 'number' ? 'number' : p.type as QueryableType])))
/**
 * What a filter may name: the queryables and their types, whether attributes are named too
 * (properties.name; the sources' only), and the two instants of the stored period (for hints).
 */
export interface FilterQueryables {
  types: Readonly<Record<string, QueryableType>>
  attributes: boolean
  period: [string, string]
}

/** A queryable's name (a key of QUERYABLE_TYPES). */
export type Queryable = string
/** A queryable other than geometry. */
export type ScalarProperty = string
/** A queryable of type timestamp. */
export type InstantProperty = string

/**
 * An attribute as one type (sql/functions/attributes.sql's sources_attribute_*): an organisation's
 * declared attribute, or `properties.name` typed by what it is compared with.
 */
export type AttributeOperand = { attribute: string, as: 'string' | 'number' | 'boolean' | 'timestamp' }
/** A scalar operand: a property, an attribute, or a literal (a timestamp as RFC 3339 UTC text). */
export type Scalar = { property: ScalarProperty } | AttributeOperand | { text: string } | { number: number } | { timestamp: string } | { boolean: boolean }
/** A geometry operand: the source's area, WKT in CRS84, or a BBOX as boxes (two across the antimeridian). */
export type Geom = { property: string } | { wkt: string } | { boxes: SearchBox[] }
/** An instant: a property, a timestamp attribute, or a timestamp (or '-infinity' / 'infinity' for an open end). */
export type Instant = { property: InstantProperty } | AttributeOperand | { timestamp: string }
/** A temporal operand: an instant, or a closed interval [begin, end]. */
export type Temporal = { at: Instant } | { begin: Instant, end: Instant }

export type Comparison = '=' | '<>' | '<' | '>' | '<=' | '>='
export type SpatialRelation = 'intersects' | 'disjoint' | 'within' | 'contains' | 'equals' | 'overlaps' | 'touches' | 'crosses'
export type TemporalRelation = 'after' | 'before' | 'disjoint' | 'equals' | 'intersects' | 'contains' | 'during' | 'finishedBy' |
  'finishes' | 'meets' | 'metBy' | 'overlappedBy' | 'overlaps' | 'startedBy' | 'starts'

export type FilterExpr =
  | { op: 'and' | 'or', args: FilterExpr[] }
  | { op: 'not', arg: FilterExpr }
  | { op: 'literal', value: boolean }
  | { op: 'compare', cmp: Comparison, args: [Scalar, Scalar] }
  | { op: 'like', args: [Scalar, { text: string }] }
  | { op: 'between', args: [Scalar, Scalar, Scalar] }
  | { op: 'in', value: Scalar, list: Scalar[] }
  | { op: 'isNull', arg: Scalar }
  | { op: 'spatial', relation: SpatialRelation, args: [Geom, Geom] }
  | { op: 'temporal', relation: TemporalRelation, args: [Temporal, Temporal] }

/** The keys of a FilterExpr whose string values are its shape rather than parameters. */
export const FILTER_SHAPE_KEYS = ['op', 'cmp', 'relation', 'property', 'attribute', 'as']

/**
 * The row a filter tests: a queryable's value, the index's test of the geometry against a
 * literal, the stored period with the two instants that bound it (INTERVAL(begin, end) against
 * constants is tested on it), and the attributes (absent: the checker refuses attributes).
 */
export interface FilterRow {
  value: (name: string) => RawBuilder<unknown>
  geomMeets: (literal: RawBuilder<unknown>) => RawBuilder<boolean>
  period: { column: RawBuilder<unknown>, begin: string, end: string }
  attributes?: RawBuilder<unknown>
}

const SOURCE = sourceRow('sources')
/** The `sources` relation of a listing. */
export const SOURCES_ROW: FilterRow = {
  value: (name) => valueOf(name, SOURCE),
  geomMeets: (literal) => sql<boolean>`${SOURCE.geom} && ${literal}`,
  period: { column: SOURCE.period, begin: 'start_at', end: 'end_at' },
  attributes: SOURCE.attributes
}
const CONFLICT = valueOf('conflict', SOURCE) as RawBuilder<boolean>

const ATTRIBUTE_FUNCTIONS: Record<AttributeOperand['as'], string> = {
  string: 'sources_attribute_text', number: 'sources_attribute_number', boolean: 'sources_attribute_boolean', timestamp: 'sources_attribute_timestamp'
}

/** An attribute's value as its type; the name is a literal, as in the index of a declared attribute (attribute-schemas.repository.ts). */
export const attributeValue = (a: AttributeOperand, attributes: RawBuilder<unknown> = SOURCE.attributes): RawBuilder<unknown> =>
  sql`${sql.raw(ATTRIBUTE_FUNCTIONS[a.as])}(${attributes}, ${sql.lit(a.attribute)})`

function scalar (s: Scalar, row: FilterRow): RawBuilder<unknown> {
  if ('property' in s) return row.value(s.property)
  if ('attribute' in s) return attributeValue(s, row.attributes)
  if ('text' in s) return sql`${s.text}::text`
  if ('number' in s) return sql`${s.number}::float8`
  if ('timestamp' in s) return sql`${s.timestamp}::timestamptz`
  return s.boolean ? sql`TRUE` : sql`FALSE`
}

const COMPARISONS: Record<Comparison, RawBuilder<unknown>> = { '=': sql`=`, '<>': sql`<>`, '<': sql`<`, '>': sql`>`, '<=': sql`<=`, '>=': sql`>=` }

function envelope ({ west, south, east, north }: SearchBox): RawBuilder<unknown> {
  return sql`ST_MakeEnvelope(${west}::float8, ${south}::float8, ${east}::float8, ${north}::float8, 4326)`
}

/** A literal geometry, made once per statement (an InitPlan), not once per row. */
function geometry (g: Geom, row: FilterRow): RawBuilder<unknown> {
  if ('property' in g) return row.value(g.property)
  if ('wkt' in g) return sql`(SELECT ST_GeomFromText(${g.wkt}::text, 4326))`
  const [first, second] = g.boxes as [SearchBox, SearchBox | undefined]
  return second === undefined ? envelope(first) : sql`ST_Collect(${envelope(first)}, ${envelope(second)})`
}

const SPATIAL: Record<SpatialRelation, (a: RawBuilder<unknown>, b: RawBuilder<unknown>) => RawBuilder<boolean>> = {
  intersects: (a, b) => sql`ST_Intersects(${a}, ${b})`,
  disjoint: (a, b) => sql`ST_Disjoint(${a}, ${b})`,
  within: (a, b) => sql`ST_Within(${a}, ${b})`,
  contains: (a, b) => sql`ST_Contains(${a}, ${b})`,
  equals: (a, b) => sql`ST_Equals(${a}, ${b})`,
  overlaps: (a, b) => sql`ST_Overlaps(${a}, ${b})`,
  touches: (a, b) => sql`ST_Touches(${a}, ${b})`,
  crosses: (a, b) => sql`ST_Crosses(${a}, ${b})`
}

function spatial (relation: SpatialRelation, [a, b]: [Geom, Geom], intersectsBox: (box: SearchBox) => RawBuilder<boolean>, row: FilterRow): RawBuilder<boolean> {
  // The source's area against a BBOX: the very SQL of the bbox parameter (sources.listing.ts).
  const boxes = 'boxes' in b && 'property' in a ? b.boxes : 'boxes' in a && 'property' in b ? a.boxes : undefined
  if (boxes !== undefined && (relation === 'intersects' || relation === 'disjoint')) {
    const any = sql<boolean>`(${sql.join(boxes.map(intersectsBox), sql` OR `)})`
    return relation === 'intersects' ? any : sql<boolean>`NOT ${any}`
  }
  const exact = SPATIAL[relation](geometry(a, row), geometry(b, row))
  // Every relation but disjoint needs the bounding boxes to meet: that test is the index's.
  if (relation === 'disjoint' || !('property' in a || 'property' in b) || ('property' in a && 'property' in b)) return exact
  const literal = 'property' in a ? geometry(b, row) : geometry(a, row)
  return sql<boolean>`(${row.geomMeets(literal)} AND ${exact})`
}

const instant = (i: Instant, row: FilterRow): RawBuilder<unknown> => 'property' in i ? row.value(i.property) : 'attribute' in i ? attributeValue(i, row.attributes) : sql`${i.timestamp}::timestamptz`
const bounds = (t: Temporal): [Instant, Instant] => 'at' in t ? [t.at, t.at] : [t.begin, t.end]

/**
 * CQL2's temporal relations (OWL-Time's, Table 7 and 8 of 21-065r2) on closed intervals
 * [b1, e1] and [b2, e2]; an instant is the interval [t, t].
 */
const TEMPORAL: Record<TemporalRelation, (b1: RawBuilder<unknown>, e1: RawBuilder<unknown>, b2: RawBuilder<unknown>, e2: RawBuilder<unknown>) => RawBuilder<boolean>> = {
  before: (_b1, e1, b2) => sql`${e1} < ${b2}`,
  after: (b1, _e1, _b2, e2) => sql`${b1} > ${e2}`,
  disjoint: (b1, e1, b2, e2) => sql`(${e1} < ${b2} OR ${b1} > ${e2})`,
  intersects: (b1, e1, b2, e2) => sql`(${b1} <= ${e2} AND ${e1} >= ${b2})`,
  equals: (b1, e1, b2, e2) => sql`(${b1} = ${b2} AND ${e1} = ${e2})`,
  contains: (b1, e1, b2, e2) => sql`(${b1} < ${b2} AND ${e2} < ${e1})`,
  during: (b1, e1, b2, e2) => sql`(${b2} < ${b1} AND ${e1} < ${e2})`,
  finishedBy: (b1, e1, b2, e2) => sql`(${b1} < ${b2} AND ${e1} = ${e2})`,
  finishes: (b1, e1, b2, e2) => sql`(${b2} < ${b1} AND ${e1} = ${e2})`,
  meets: (_b1, e1, b2) => sql`${e1} = ${b2}`,
  metBy: (b1, _e1, _b2, e2) => sql`${b1} = ${e2}`,
  overlappedBy: (b1, e1, b2, e2) => sql`(${b2} < ${b1} AND ${b1} < ${e2} AND ${e2} < ${e1})`,
  overlaps: (b1, e1, b2, e2) => sql`(${b1} < ${b2} AND ${b2} < ${e1} AND ${e1} < ${e2})`,
  startedBy: (b1, e1, b2, e2) => sql`(${b1} = ${b2} AND ${e2} < ${e1})`,
  starts: (b1, e1, b2, e2) => sql`(${b1} = ${b2} AND ${e1} < ${e2})`
}

const isPeriod = (t: Temporal, row: FilterRow): boolean => 'begin' in t && 'property' in t.begin && t.begin.property === row.period.begin && 'property' in t.end && t.end.property === row.period.end
const isConstant = (t: Temporal): boolean => bounds(t).every((i) => 'timestamp' in i)

function temporal (relation: TemporalRelation, [t1, t2]: [Temporal, Temporal], row: FilterRow): RawBuilder<boolean> {
  const [b1, e1] = bounds(t1).map((i) => instant(i, row)) as [RawBuilder<unknown>, RawBuilder<unknown>]
  const [b2, e2] = bounds(t2).map((i) => instant(i, row)) as [RawBuilder<unknown>, RawBuilder<unknown>]
  const exact = TEMPORAL[relation](b1, e1, b2, e2)
  if (relation === 'before' || relation === 'after' || relation === 'disjoint') return exact
  // Every other relation implies that the closed intervals meet: b1 <= e2 AND e1 >= b2. With
  // INTERVAL(start_at, end_at) on one side and constants on the other, that is the stored
  // period (half-open, whole microseconds) overlapping [b - 1 µs, e]: a test sources_period_gist answers.
  const other = isPeriod(t1, row) && isConstant(t2) ? [b2, e2] : isPeriod(t2, row) && isConstant(t1) ? [b1, e1] : undefined
  if (other === undefined) return exact
  const overlap = sql<boolean>`${row.period.column} && tstzrange(${other[0]} - interval '1 microsecond', ${other[1]}, '[]')`
  // For T_INTERSECTS that overlap is the relation itself, and the index alone answers it.
  return relation === 'intersects' ? overlap : sql<boolean>`(${overlap} AND ${exact})`
}

/** The SQL of a filter expression on a row (the sources'); `intersectsBox` is the bbox parameter's test of one box. */
export function filterSql (e: FilterExpr, intersectsBox: (box: SearchBox) => RawBuilder<boolean>, row: FilterRow = SOURCES_ROW): RawBuilder<boolean> {
  const sub = (x: FilterExpr): RawBuilder<boolean> => filterSql(x, intersectsBox, row)
  const scalar_ = (x: Scalar): RawBuilder<unknown> => scalar(x, row)
  switch (e.op) {
    case 'and':
    case 'or':
      return sql<boolean>`(${sql.join(e.args.map(sub), e.op === 'and' ? sql` AND ` : sql` OR `)})`
    case 'not':
      return sql<boolean>`(NOT ${sub(e.arg)})`
    case 'literal':
      return e.value ? sql<boolean>`TRUE` : sql<boolean>`FALSE`
    case 'compare': {
      const [a, b] = e.args
      // conflict = TRUE and the like: the EXISTS itself, which the planner makes a semi-join.
      if (row === SOURCES_ROW && 'property' in a && a.property === 'conflict' && 'boolean' in b && (e.cmp === '=' || e.cmp === '<>')) {
        return (e.cmp === '=') === b.boolean ? CONFLICT : sql<boolean>`NOT ${CONFLICT}`
      }
      return sql<boolean>`(${scalar_(a)} ${COMPARISONS[e.cmp]} ${scalar_(b)})`
    }
    case 'like':
      return sql<boolean>`(${scalar_(e.args[0])} LIKE ${scalar_(e.args[1])} ESCAPE '\\')`
    case 'between':
      return sql<boolean>`(${scalar_(e.args[0])} BETWEEN ${scalar_(e.args[1])} AND ${scalar_(e.args[2])})`
    case 'in':
      return sql<boolean>`(${scalar_(e.value)} IN (${sql.join(e.list.map(scalar_))}))`
    case 'isNull':
      // An attribute is null when absent or JSON null, whatever its declared type.
      if ('attribute' in e.arg) return sql<boolean>`(coalesce(${row.attributes} -> ${sql.lit(e.arg.attribute)}, 'null'::jsonb) = 'null'::jsonb)`
      return sql<boolean>`(${scalar_(e.arg)} IS NULL)`
    case 'spatial':
      return spatial(e.relation, e.args, intersectsBox, row)
    case 'temporal':
      return temporal(e.relation, e.args, row)
  }
}

/** Whether an expression tests the geometry (then a first page is counted as with a bbox). */
export function hasSpatial (e: FilterExpr): boolean {
  if (e.op === 'and' || e.op === 'or') return e.args.some(hasSpatial)
  if (e.op === 'not') return hasSpatial(e.arg)
  return e.op === 'spatial'
}

/**
 * Why each WKT literal (CRS84) is not a valid geometry, or null when it is: PostGIS's
 * ST_IsValidReason, the rule sources_geom_valid applies to the sources themselves. GEOS throws
 * on most relations with an invalid operand, so a filter's lines and polygons are checked first.
 */
export async function geometryProblems (db: Db, wkts: string[]): Promise<Array<string | null>> {
  const { rows } = await sql<{ reason: string | null }>`SELECT CASE WHEN ST_IsValid(g) THEN NULL ELSE ST_IsValidReason(g) END AS reason
    FROM unnest(${wkts}::text[]) WITH ORDINALITY AS w(wkt, n), ST_GeomFromText(w.wkt, 4326) AS g ORDER BY w.n`.execute(db)
  return rows.map((r) => r.reason)
}
