// The properties of a source, each defined once: its SQL expression, its JSON type, whether it is
// returned, queryable, sortable and drawn in tiles, its title and description. Everything that
// names properties is derived from SOURCE_PROPERTIES: the Feature text PostgreSQL makes for GET,
// items, as_of and versions (featureText), CQL2's queryables and their SQL (filter.sql.ts), the
// sort keys of the items (sources.listing.ts), the tile attributes (tiles.repository.ts), the
// response schemas, the schema and queryables documents, and the table in docs/api.md
// (test/sources/properties.test.ts holds every consumer to it). A property computed from
// existing columns is one entry here; one that needs a column also needs a migration.
import { type TSchema, Type } from '@sinclair/typebox'
import { type RawBuilder, sql } from 'kysely'
import { isoUtc, isoUtcMicros, isoUtcTrimmed, stAsGeoJson } from '../db/postgis.js'
import { FeatureIdSchema, OverlapFields, SourceIdSchema } from '../schemas/primitives.js'
import type { OutputCrs } from './crs.js'

/** A source's conflicts are listed up to this many, largest overlap first; beyond, a total. */
export const CONFLICTS_LISTED = 100

/**
 * The columns a property is computed from, in the row being read: a current source
 * (sourceRow) or one of its versions (versionRow, where updated_at is when the version was
 * recorded).
 */
export interface SourceColumns {
  id: RawBuilder<unknown>
  featureId: RawBuilder<unknown>
  organisation: RawBuilder<unknown>
  geom: RawBuilder<unknown>
  period: RawBuilder<unknown>
  createdAt: RawBuilder<unknown>
  updatedAt: RawBuilder<unknown>
  version: RawBuilder<unknown>
  areaM2: RawBuilder<unknown>
  /** The client's attributes, a jsonb object (sql/025_source_attributes.sql). */
  attributes: RawBuilder<unknown>
}

/** The conflicts a read joins once per row (conflictsJoin): their list as JSON text (null: none) and the total beyond CONFLICTS_LISTED. */
export interface ConflictSummary { list: RawBuilder<unknown>, total: RawBuilder<unknown> }

export type PropertyType = 'string' | 'timestamp' | 'integer' | 'number' | 'boolean' | 'geometry' | 'conflicts'

export interface SourceProperty {
  title: string
  /** One line: the description in the schema, queryables and docs. */
  description: string
  type: PropertyType
  /** Its value, from the row's columns: what filters compare, sorts order and tiles draw. */
  value?: (c: SourceColumns) => RawBuilder<unknown>
  /** Its JSON text in a Feature, when not the value's own (null leaves an optional member out). */
  json?: (c: SourceColumns, conflicts: ConflictSummary) => RawBuilder<unknown>
  /** In a Feature's properties: always, only when it has a value, or never (id and geometry are the Feature's own members). */
  returned: 'always' | 'optional' | false
  /** In a version's Feature too (conflicts are not versioned: each is decided against the sources of its time). */
  versioned: boolean
  /** Named by CQL2 filters (/collections/sources/queryables). */
  queryable: boolean
  /** A sortby key of the items. */
  sortable: boolean
  /** An attribute of the vector tiles, and how a mark standing for several small sources sums it up ('single': absent on a mark). */
  tiles?: 'single' | 'min' | 'max' | 'sum' | 'any'
  /** The JSON Schema of its value in responses, where more is said than its type. */
  schema?: TSchema
}

const conflictsSchema = Type.Array(Type.Object({ id: SourceIdSchema, ...OverlapFields }, {
  additionalProperties: false, description: 'A conflicting source: only its id and the overlap are shown, whatever its organisation.'
}), { maxItems: CONFLICTS_LISTED })

/** The pairs of the source, read from source_conflict_pairs_by_overlap alone. */
const hasConflict = (c: SourceColumns) => sql<boolean>`EXISTS (SELECT 1 FROM source_conflict_pairs AS p WHERE p.source_id = ${c.id})`

/**
 * A source's own state, like METI's encumbered status: encumbered while it is a party to a
 * conflict (sql/040_conflict_states.sql) neither resolved nor accepted by both, else clear. Two
 * probes of the partial indexes of unresolved conflicts.
 */
const encumbrance = (c: SourceColumns) => sql<string>`CASE WHEN EXISTS (SELECT 1 FROM conflicts AS cs WHERE cs.source_a = ${c.id} AND cs.resolved_at IS NULL AND cs.state <> 'accepted')
  OR EXISTS (SELECT 1 FROM conflicts AS cs WHERE cs.source_b = ${c.id} AND cs.resolved_at IS NULL AND cs.state <> 'accepted') THEN 'encumbered' ELSE 'clear' END`

export const SOURCE_PROPERTIES = {
  id: {
    title: 'Source id', description: 'The id the registry gave the source (src_…).', type: 'string',
    value: (c) => c.id, returned: false, versioned: true, queryable: true, sortable: true, tiles: 'single'
  },
  feature_id: {
    title: 'Feature id', description: 'The client\'s own feature id.', type: 'string', schema: FeatureIdSchema,
    value: (c) => c.featureId, returned: 'always', versioned: true, queryable: true, sortable: false, tiles: 'single'
  },
  start_at: {
    title: 'Start', description: 'The first instant of the validity period.', type: 'timestamp',
    value: (c) => sql`lower(${c.period})`, returned: 'always', versioned: true, queryable: true, sortable: true, tiles: 'min'
  },
  end_at: {
    title: 'End',
    description: 'The end of the validity period, the first instant after it: the period is [start_at, end_at). INTERVAL(start_at, end_at) is the CQL2 interval of the two values, closed at both ends.',
    type: 'timestamp', value: (c) => sql`upper(${c.period})`, returned: 'always', versioned: true, queryable: true, sortable: true, tiles: 'max'
  },
  created_at: {
    title: 'Created', description: 'When the source was registered.', type: 'timestamp',
    value: (c) => c.createdAt, returned: 'always', versioned: true, queryable: true, sortable: true
  },
  updated_at: {
    title: 'Updated', description: 'When this version was written (created_at for version 1).', type: 'timestamp',
    value: (c) => c.updatedAt, returned: 'always', versioned: true, queryable: true, sortable: false
  },
  version: {
    title: 'Version', description: 'Its version number: 1 when created, one more at every change. The ETag names it.', type: 'integer',
    schema: Type.Integer({ minimum: 1 }), value: (c) => c.version, returned: 'always', versioned: true, queryable: true, sortable: false
  },
  organisation: {
    title: 'Organisation', description: 'The organisation the source belongs to.', type: 'string',
    value: (c) => c.organisation, returned: 'always', versioned: true, queryable: false, sortable: false
  },
  area_m2: {
    title: 'Area (m²)', description: 'The area on the WGS 84 ellipsoid in square metres, edges straight in longitude/latitude as RFC 7946 defines them.',
    type: 'number', value: (c) => c.areaM2, returned: 'always', versioned: true, queryable: true, sortable: false, tiles: 'sum'
  },
  conflict: {
    title: 'In conflict',
    description: 'Whether another source (of any organisation) claims the same land for an overlapping period: periods overlap and the areas still intersect after each is shrunk inward by the conflict tolerance (9 m by default).',
    type: 'boolean', value: hasConflict, json: (_c, k) => sql`(${k.list} IS NOT NULL)::text`,
    returned: 'always', versioned: false, queryable: true, sortable: false, tiles: 'any'
  },
  conflicts: {
    title: 'Conflicts', description: `The conflicting sources, largest overlap first; the first ${CONFLICTS_LISTED} when there are more (then conflicts_total).`,
    type: 'conflicts', schema: conflictsSchema, json: (_c, k) => sql`'[' || coalesce(${k.list}, '') || ']'`,
    returned: 'always', versioned: false, queryable: false, sortable: false
  },
  conflicts_total: {
    title: 'Conflicts in all', description: `Present when there are more than ${CONFLICTS_LISTED} conflicts: how many.`, type: 'integer',
    schema: Type.Integer({ minimum: CONFLICTS_LISTED + 1 }), json: (_c, k) => sql`${k.total}::text`,
    returned: 'optional', versioned: false, queryable: false, sortable: false
  },
  conflict_state: {
    title: 'Conflict state',
    description: 'encumbered while the source is a party to a conflict (GET /conflicts) that is neither resolved nor accepted by both parties, else clear; a deleted source answers 410 (its state is deleted).',
    type: 'string', schema: Type.Union([Type.Literal('encumbered'), Type.Literal('clear')]), value: encumbrance,
    returned: 'always', versioned: false, queryable: true, sortable: false
  },
  geometry: {
    title: 'Area', description: 'The source\'s area, a Polygon or a MultiPolygon in CRS84.', type: 'geometry',
    value: (c) => c.geom, returned: false, versioned: true, queryable: true, sortable: false
  }
} as const satisfies Record<string, SourceProperty>

export type PropertyName = keyof typeof SOURCE_PROPERTIES
const entries = Object.entries(SOURCE_PROPERTIES) as Array<[PropertyName, SourceProperty]>

/** The properties that satisfy `test`, in the registry's order. */
export function propertiesWhere (test: (p: SourceProperty) => boolean): Array<[PropertyName, SourceProperty]> {
  return entries.filter(([, p]) => test(p))
}

/** The named property; throws for a name that is not one (a programming error: callers check names first). */
export function property (name: string): SourceProperty {
  if (!Object.hasOwn(SOURCE_PROPERTIES, name)) throw new Error(`no source property ${name}`)
  return SOURCE_PROPERTIES[name as PropertyName]
}

/** Its value over these columns (every property a filter, sort or tile names has one). */
export function valueOf (name: string, c: SourceColumns): RawBuilder<unknown> {
  const p = property(name)
  if (p.value === undefined) throw new Error(`source property ${name} has no value to compute`)
  return p.value(c)
}

/** The columns of `sources` (or a relation with its columns) under this alias. */
export function sourceRow (alias: string): SourceColumns {
  const col = (name: string) => sql.ref(`${alias}.${name}`)
  return {
    id: col('id'), featureId: col('feature_id'), organisation: col('organisation'), geom: col('geom'), period: col('period'),
    createdAt: col('created_at'), updatedAt: col('updated_at'), version: col('version'), areaM2: col('area_m2'), attributes: col('attributes')
  }
}

/** The columns of a source_versions row under this alias: the source as that version held it. */
export function versionRow (alias: string): SourceColumns {
  const col = (name: string) => sql.ref(`${alias}.${name}`)
  return {
    ...sourceRow(alias),
    id: col('source_id'),
    updatedAt: col('recorded_at'),
    // Versions written before sql/019 have no stored area.
    areaM2: sql`coalesce(${col('area_m2')}, lonlat_area_m2(${col('geom')}))`
  }
}

/** A timestamp value as the API writes it (db/postgis.ts isoUtc), as JSON text. */
const isoJson = (ts: RawBuilder<unknown>): RawBuilder<string> => sql<string>`'"' || ${isoUtc(ts)} || '"'`

/** A value as JSON text, by its type (numbers in float8out's shortest exact form, as JavaScript's). */
function jsonOf (type: PropertyType, v: RawBuilder<unknown>): RawBuilder<unknown> {
  switch (type) {
    case 'timestamp': return isoJson(v)
    case 'string': return sql`to_json(${v})::text`
    case 'geometry': return stAsGeoJson(v)
    default: return sql`(${v})::text`
  }
}

/**
 * The conflicts of the source with this id, joined once per row of a read (LEFT JOIN LATERAL …
 * ON true): the first CONFLICTS_LISTED as JSON text, largest overlap first, and their total only
 * when there are more (counted then, from the index source_conflict_pairs_by_overlap alone).
 */
export function conflictsJoin (id: RawBuilder<unknown>, alias: string): RawBuilder<unknown> {
  const item = conflictItem
  return sql`LEFT JOIN LATERAL (SELECT string_agg(${item}, ',' ORDER BY c.overlap_m2 DESC, c.other_id) AS list,
      CASE WHEN count(*) = ${sql.lit(CONFLICTS_LISTED)} THEN (SELECT NULLIF(count(*), 0) FROM (SELECT 1 FROM source_conflict_pairs AS p WHERE p.source_id = ${id}
        OFFSET ${sql.lit(CONFLICTS_LISTED)}) AS beyond) + ${sql.lit(CONFLICTS_LISTED)} END AS total
    FROM (SELECT p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period FROM source_conflict_pairs AS p
      WHERE p.source_id = ${id} ORDER BY p.overlap_m2 DESC, p.other_id LIMIT ${sql.lit(CONFLICTS_LISTED)}) AS c) AS ${sql.ref(alias)} ON true`
}

/** A conflict (a pair under the alias c) as JSON text in a Feature's conflicts. */
const conflictItem = sql`'{"id":' || to_json(c.other_id) || ',"overlap_m2":' || c.overlap_m2 || ',"overlap_ratio":' || c.overlap_ratio
    || ',"overlap_start":' || ${isoJson(sql`lower(c.overlap_period)`)} || ',"overlap_end":' || ${isoJson(sql`upper(c.overlap_period)`)} || '}'`

/**
 * conflictsJoin's summaries for every source of a relation at once (`ids`, its name, with an id
 * column; a bulk export's range): the pairs of its ids found by a probe of the pairs' index each
 * and summed up by source in one aggregate, instead of a subquery and an aggregate for each row,
 * which were much of PostgreSQL's time for a row of a range without conflicts
 * (docs/performance.md). Probes, not one range of the index between the first and the last id:
 * ids are random, so an organisation's range of ids spans every other's pairs too.
 */
export function conflictsJoinAll (id: RawBuilder<unknown>, ids: string, alias: string): RawBuilder<unknown> {
  const relation = sql.table(ids)
  return sql`LEFT JOIN (SELECT c.source_id, string_agg(${conflictItem}, ',' ORDER BY c.overlap_m2 DESC, c.other_id) FILTER (WHERE c.n <= ${sql.lit(CONFLICTS_LISTED)}) AS list,
      CASE WHEN count(*) > ${sql.lit(CONFLICTS_LISTED)} THEN count(*) END AS total
    FROM (SELECT p.source_id, p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period,
        row_number() OVER (PARTITION BY p.source_id ORDER BY p.overlap_m2 DESC, p.other_id) AS n
      FROM ${relation} AS k JOIN source_conflict_pairs AS p ON p.source_id = k.id) AS c
    GROUP BY c.source_id) AS ${sql.ref(alias)} ON ${sql.ref(alias)}.source_id = ${id}`
}

/** The conflict summary of a row that conflictsJoin joined under this alias. */
export const conflictSummary = (alias: string): ConflictSummary => ({ list: sql.ref(`${alias}.list`), total: sql.ref(`${alias}.total`) })

/** A version has no conflicts. */
const NO_CONFLICTS: ConflictSummary = { list: sql`NULL::text`, total: sql`NULL::bigint` }

/**
 * What a read asks of its Features: the CRS of the geometry (undefined: CRS84, as stored), the
 * returned properties it names (undefined: all), and whether the geometry is left out (null).
 * Each is part of a compiled query's shape (a literal in its SQL), never a parameter.
 */
export interface FeatureOutput { crs?: OutputCrs, properties?: readonly string[], skipGeometry?: boolean }

/** The returned properties, in the registry's order (of a version: those versioned). */
export function returnedProperties (isVersion: boolean): Array<[PropertyName, SourceProperty]> {
  return propertiesWhere((p) => p.returned !== false && (!isVersion || p.versioned))
}

/** The returned properties a read's Features hold: those out.properties names, or all. */
const chosenProperties = (isVersion: boolean, out: FeatureOutput): Array<[PropertyName, SourceProperty]> =>
  returnedProperties(isVersion).filter(([name]) => out.properties === undefined || out.properties.includes(name))

/** The names `properties=` may give: every returned property (RETURNABLE). */
export const RETURNABLE = returnedProperties(false).map(([name]) => name)

/**
 * The geometry as GeoJSON text in the output CRS: ST_Transform, then the axes swapped when the
 * CRS's first axis points north (crs.ts). Options 0: no "crs" member (the Content-Crs header says it).
 */
function geometryJson (geom: RawBuilder<unknown>, out: FeatureOutput): RawBuilder<unknown> {
  if (out.skipGeometry === true) return sql`'null'`
  if (out.crs === undefined) return stAsGeoJson(geom)
  return sql`ST_AsGeoJSON(${geometryOut(geom, out)}, 15, 0)`
}

/** The geometry in the output CRS: as stored (CRS84), or ST_Transform'ed, its axes swapped when the CRS's first axis points north (crs.ts). */
function geometryOut (geom: RawBuilder<unknown>, out: FeatureOutput): RawBuilder<unknown> {
  if (out.crs === undefined) return geom
  const transformed = sql`ST_Transform(${geom}, ${sql.lit(out.crs.srid)})`
  return out.crs.northFirst ? sql`ST_FlipCoordinates(${transformed})` : transformed
}

/**
 * The GeoJSON Feature of a row as JSON text made by PostgreSQL, its properties those returned
 * (of a version: those versioned; with out.properties, those it names) in the registry's order.
 * GET, items, as_of and versions all send this text as it is: the service reads one column per
 * Feature instead of parsing a row's fields and serialising them again.
 */
export function featureText (c: SourceColumns, conflicts: ConflictSummary | 'version', out: FeatureOutput = {}): RawBuilder<string> {
  const isVersion = conflicts === 'version'
  const k = isVersion ? NO_CONFLICTS : conflicts
  const chosen = chosenProperties(isVersion, out)
  const head = sql`'{"type":"Feature","id":' || to_json(${c.id}) || ',"geometry":' || ${geometryJson(c.geom, out)} || ',"properties":{'`
  const valueJson = ([name, p]: [PropertyName, SourceProperty]) => p.json !== undefined ? p.json(c, k) : jsonOf(p.type, valueOf(name, c))
  if (chosen.length === 0 || chosen[0]?.[1].returned !== 'always') {
    // An optional property first (or none): the members joined by concat_ws, which skips those that are null.
    const members = chosen.map((e) => sql`${sql.lit(`"${e[0]}":`)} || ${valueJson(e)}`)
    const attributes = attributesInner(c.attributes, out.properties)
    if (attributes !== undefined) members.push(attributes)
    if (members.length === 0) return sql<string>`${head} || '}}'`
    return sql<string>`${head} || concat_ws(',', ${sql.join(members)}) || '}}'`
  }
  const members = chosen.map((e, i) => {
    const key = sql.lit(`${i === 0 ? '' : ','}"${e[0]}":`)
    return e[1].returned === 'optional' ? sql`coalesce(${key} || ${valueJson(e)}, '')` : sql`${key} || ${valueJson(e)}`
  })
  const attributes = attributesInner(c.attributes, out.properties)
  return sql<string>`${head} || ${sql.join(members, sql` || `)}${attributes === undefined ? sql`` : sql` || coalesce(',' || ${attributes}, '')`} || '}}'`
}

/**
 * A property's value in the one type its binary form is read as (BINARY_TYPES), for a binary
 * COPY of featureColumns (`binary`): a timestamp as timestamptz, not text (to_char was much of
 * PostgreSQL's time for each row: docs/performance.md); a JSON text (conflict's true/false, conflicts_total's number)
 * cast back to its value.
 */
function binaryValue (p: SourceProperty, v: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(${v})::${sql.raw(BINARY_TYPES[p.type])}`
}

/** The PostgreSQL type of each property type's values in featureColumns' binary form; JSON (conflicts) as its text. */
export const BINARY_TYPES: Record<PropertyType, string> = {
  string: 'text', timestamp: 'timestamptz', integer: 'int8', number: 'float8', boolean: 'bool', conflicts: 'text', geometry: 'text'
}

/** A returned property as a column of featureColumns: its value as it is (a timestamp as isoUtcMicros' text), or its JSON text (`json`: the reader parses it). */
export interface FeatureColumn { name: PropertyName, type: PropertyType, json: boolean }

/**
 * The parts of the Feature featureText makes, as columns of their own, for a reader that encodes
 * each value itself instead of parsing the Feature's text (the FlatGeobuf export: making the text
 * was most of PostgreSQL's time, parsing it much of Node's; docs/performance.md): `geometry_wkb`,
 * the geometry as WKB in the output CRS (its axes as the output says), then each property
 * featureText returns, in its order, under its own name (featureColumnList says how each
 * comes), then `attributes_json`, the attributes featureText returns as a JSON object's text
 * (NULL: none). `binary`: each property's value in its type's BINARY_TYPES type instead, for a
 * binary COPY (db/copy-binary.ts).
 */
export function featureColumns (c: SourceColumns, conflicts: ConflictSummary, out: FeatureOutput = {}, binary = false): RawBuilder<unknown> {
  const values = chosenProperties(false, out).map(([name, p]) => {
    const v = binary
      ? binaryValue(p, p.json !== undefined ? p.json(c, conflicts) : valueOf(name, c))
      : p.json !== undefined ? p.json(c, conflicts) : p.type === 'timestamp' ? isoUtcMicros(valueOf(name, c)) : valueOf(name, c)
    return sql`${v} AS ${sql.ref(name)}`
  })
  const attributes = attributesInner(c.attributes, out.properties)
  return sql.join([
    sql`ST_AsBinary(${geometryOut(c.geom, out)}) AS geometry_wkb`,
    ...values,
    sql`${attributes === undefined ? sql`NULL::text` : sql`'{' || ${attributes} || '}'`} AS attributes_json`
  ])
}

/**
 * A Feature's properties from a row of featureColumns, as featureText's would parse: the
 * returned properties in its order (an optional one without a value as null), then the
 * attributes. `columns`: featureColumnList of the same output.
 */
export function featurePropertiesOf (row: Record<string, unknown>, columns: readonly FeatureColumn[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {}
  const values = featureValuesOf(row, columns)
  for (const [i, { name }] of columns.entries()) properties[name] = values[i]
  const attributes = row.attributes_json
  if (typeof attributes === 'string') {
    // Defined, not assigned: an attribute may be named __proto__.
    for (const [k, v] of Object.entries(JSON.parse(attributes) as Record<string, unknown>)) Object.defineProperty(properties, k, { value: v, enumerable: true, writable: true, configurable: true })
  }
  return properties
}

/**
 * The returned properties' values of a row of featureColumns, in the columns' order (null: none),
 * into `values` (a caller's array used again for each row) or a new array.
 * Read by position (the row's members are in the statement's order: id, geometry_wkb, then the
 * properties), not by name: lookups by name were a visible part of a large export's profile.
 */
export function featureValuesOf (row: Record<string, unknown>, columns: readonly FeatureColumn[], values: unknown[] = new Array<unknown>(columns.length)): unknown[] {
  const raw = Object.values(row)
  for (let i = 0; i < columns.length; i++) {
    const { type, json } = columns[i] as FeatureColumn
    const v = raw[i + 2]
    // A JSON text of a scalar is read without JSON.parse: conflict's true/false and
    // conflicts_total's number. pg gives int8 values as text too.
    values[i] = v === null || v === undefined
      ? null
      : type === 'timestamp' ? isoUtcTrimmed(v as string) : type === 'boolean' && json ? v === 'true' : type === 'integer' ? Number(v) : json ? JSON.parse(v as string) : v
  }
  return values
}

/** The property columns of featureColumns' rows, in order, and how each comes. */
export function featureColumnList (out: FeatureOutput = {}): FeatureColumn[] {
  return chosenProperties(false, out).map(([name, p]) => ({ name, type: p.type, json: p.json !== undefined }))
}

/**
 * The names a client cannot use for an attribute: the properties the service returns. Sent in a
 * Feature they are the service's (start_at, end_at) or ignored (the rest: read-only), so a
 * Feature read from the service posts again as it is (attributes.ts).
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(propertiesWhere((p) => p.returned !== false).map(([name]) => name))

/**
 * The attributes' members, after the service's, as JSON text (the object's members without its
 * braces, NULL when there are none), or undefined when `properties=` names none. A name the
 * registry came to return after an attribute of that name was stored is left out: the Feature
 * never holds a name twice. With `properties=`, only the attributes it names.
 */
function attributesInner (attributes: RawBuilder<unknown>, chosen: readonly string[] | undefined): RawBuilder<string> | undefined {
  const named = namedAttributes(chosen)
  if (named !== undefined && named.length === 0) return undefined
  const kept = named === undefined
    ? sql`(${attributes} - ${RESERVED_ARRAY}::text[])`
    : sql`(SELECT coalesce(jsonb_object_agg(a.key, a.value), '{}'::jsonb) FROM jsonb_each(${attributes}) a WHERE a.key = ANY (${namesArray(named)}::text[]))`
  // The object's text without its braces (NULL when nothing is left), the jsonb computed once.
  return sql<string>`CASE WHEN ${attributes} = '{}'::jsonb THEN NULL ELSE nullif(left(substr(${kept}::text, 2), -1), '') END`
}

/** The attribute names `properties=` gives (its returned properties left out); undefined: every attribute. */
const namedAttributes = (chosen: readonly string[] | undefined): string[] | undefined => chosen?.filter((name) => !RESERVED_NAMES.has(name))

/** Names as a text[] literal: each in double quotes, its quotes and backslashes escaped as an array literal escapes them. */
const namesArray = (names: readonly string[]): RawBuilder<unknown> => sql.lit(`{${names.map((n) => `"${n.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`)

const RESERVED_ARRAY = sql.lit(`{${[...RESERVED_NAMES].join(',')}}`)

/**
 * The attributes a read's Features hold (attributesInner's members) as the rows of a set over
 * `attributes`: each member's key and value; undefined when `properties=` names none.
 */
export function attributeMembers (attributes: RawBuilder<unknown>, chosen: readonly string[] | undefined): RawBuilder<{ key: string, value: unknown }> | undefined {
  const named = namedAttributes(chosen)
  if (named !== undefined && named.length === 0) return undefined
  return sql`(SELECT a.key, a.value FROM jsonb_each(${attributes}) AS a WHERE ${named === undefined ? sql`NOT a.key = ANY (${RESERVED_ARRAY}::text[])` : sql`a.key = ANY (${namesArray(named)}::text[])`})`
}

/** The JSON Schema format of a property in the schema and queryables documents. */
const formatOf = (p: SourceProperty): Record<string, string> =>
  p.type === 'timestamp' ? { format: 'date-time' } : p.type === 'geometry' ? { format: 'geometry-polygon-or-multipolygon', 'x-ogc-role': 'primary-geometry' } : {}

/** A property's JSON type in the schema and queryables documents. */
const jsonTypeOf = (p: SourceProperty): Record<string, string> =>
  p.type === 'geometry' ? {} : { type: p.type === 'timestamp' ? 'string' : p.type === 'conflicts' ? 'array' : p.type }

/** The JSON Schema (2020-12) of a Feature's properties, without $schema and $id (describedBy). */
export const PROPERTIES_DOCUMENT = {
  title: 'sources',
  type: 'object' as const,
  properties: Object.fromEntries(propertiesWhere((p) => p.returned !== false).map(([name, p]) =>
    [name, { ...jsonTypeOf(p), ...formatOf(p), description: p.description }])),
  // The client's attributes, any JSON value each (attributes.ts).
  additionalProperties: true
}

/** The queryables (OGC API – Features Part 3), each as a filter sees it. */
export const QUERYABLE_PROPERTIES = Object.fromEntries(propertiesWhere((p) => p.queryable).map(([name, p]) =>
  [name, { title: p.title, description: p.description, ...jsonTypeOf(p), ...formatOf(p) }]))

/** The sortby keys of the items, in the registry's order. */
export const SORTABLE = propertiesWhere((p) => p.sortable).map(([name]) => name)

/** The sortables document's properties (like the queryables'), each with its title, description and type. */
export const SORTABLE_PROPERTIES = Object.fromEntries(propertiesWhere((p) => p.sortable).map(([name, p]) =>
  [name, { title: p.title, description: p.description, ...jsonTypeOf(p), ...formatOf(p) }]))

/** The returnables document's properties: what `properties=` may name. */
export const RETURNABLE_PROPERTIES = Object.fromEntries(returnedProperties(false).map(([name, p]) =>
  [name, { title: p.title, description: p.description, ...jsonTypeOf(p), ...formatOf(p) }]))

/** The tile attributes: name, type and how a mark sums it up. */
export const TILE_PROPERTIES = propertiesWhere((p) => p.tiles !== undefined).map(([name, p]) => ({ name, type: p.type, tiles: p.tiles as NonNullable<SourceProperty['tiles']>, description: p.description }))

/** The table of the properties in docs/api.md (between its `properties` markers; scripts/docs-tables.mjs writes it, a test holds it). */
export function propertiesTable (): string {
  const yes = (b: boolean): string => b ? 'yes' : ''
  const rows = entries.map(([name, p]) => `| \`${name}\` | ${p.type} | ${p.returned === 'always' ? (p.versioned ? 'yes' : 'yes, not in versions') : p.returned === 'optional' ? 'when it applies' : 'as the Feature\'s own'} | ${yes(p.queryable)} | ${yes(p.sortable)} | ${p.tiles ?? ''} | ${p.description} |`)
  return ['| property | type | returned | queryable | sortable | in tiles (a mark:) | description |', '|---|---|---|---|---|---|---|', ...rows].join('\n')
}
