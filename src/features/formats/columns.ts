// The columns of a table-shaped format (CSV, FlatGeobuf), made generically from the Features
// themselves: the registry's returned properties the Features hold, typed by the property
// registry (source-properties.ts), then the registry's optional properties (present only on
// some Features), then every attribute any of the Features holds, typed by its values. So a
// property added to the registry, or returned by a later change, becomes a column without more
// code here, and an attribute only a later Feature has still gets its column.
import { propertiesWhere, type PropertyType, RESERVED_NAMES, SOURCE_PROPERTIES } from '../../sources/source-properties.js'

export type ColumnKind = 'string' | 'timestamp' | 'integer' | 'number' | 'boolean' | 'json'

export interface Column { name: string, kind: ColumnKind }

/** A GeoJSON Feature as the service returns it. */
export interface OutFeature {
  type: 'Feature'
  id?: string | number
  geometry: { type: string, coordinates: unknown } | null
  properties: Record<string, unknown> | null
}

const kindOfType = (t: PropertyType): ColumnKind =>
  t === 'conflicts' || t === 'geometry' ? 'json' : t

/**
 * An attribute's column kind, from its value. A number is a double (FlatGeobuf's Double, GDAL's
 * Real), even when whole: a later Feature's 1.5 in a column typed from a first 0 would not fit a
 * 64-bit integer (GDAL's GeoJSON reader widens such a field to Real for the same reason), and
 * every safe integer is a double exactly. Null says nothing (undefined).
 */
function kindOfValue (v: unknown): ColumnKind | undefined {
  if (v === null || v === undefined) return undefined
  if (typeof v === 'boolean') return 'boolean'
  if (typeof v === 'number') return 'number'
  if (typeof v === 'string') return 'string'
  return 'json'
}

/**
 * A kind that holds values of both kinds: the same kind; for scalars of two kinds a string (the
 * strings as they are, the others as their JSON text, as GDAL's GeoJSON reader makes such a field
 * a String); else JSON.
 */
export function widerKind (a: ColumnKind | undefined, b: ColumnKind | undefined): ColumnKind | undefined {
  if (a === undefined || a === b) return b
  if (b === undefined) return a
  return a === 'json' || b === 'json' ? 'json' : 'string'
}

/**
 * The attribute columns that `features` add to `known` (names already columns, left out): each
 * name an attribute of any of them, in the order first met, its kind holding every value they
 * give it (widerKind; only nulls: JSON).
 */
export function attributeColumns (features: readonly OutFeature[], known: ReadonlySet<string>): Column[] {
  const kinds = new Map<string, ColumnKind | undefined>()
  for (const f of features) {
    const properties = f.properties
    if (properties == null) continue
    for (const name of Object.keys(properties)) {
      if (known.has(name)) continue
      kinds.set(name, widerKind(kinds.get(name), kindOfValue(properties[name])))
    }
  }
  return [...kinds].map(([name, kind]) => ({ name, kind: kind ?? 'json' }))
}

/** jsonb_typeof's names as column kinds (null says nothing). */
const KIND_OF_JSON_TYPE: Record<string, ColumnKind | undefined> = { number: 'number', string: 'string', boolean: 'boolean', object: 'json', array: 'json' }

/**
 * Attribute columns from the JSON types of each one's values (sources.listing.ts
 * attributeTypesQuery), as attributeColumns makes them from Features holding those values.
 */
export function columnsOfTypes (attributes: ReadonlyArray<{ name: string, types: readonly string[] }>): Column[] {
  return attributes.map(({ name, types }) => ({ name, kind: types.reduce<ColumnKind | undefined>((kind, t) => widerKind(kind, Object.hasOwn(KIND_OF_JSON_TYPE, t) ? KIND_OF_JSON_TYPE[t] : undefined), undefined) ?? 'json' }))
}

/**
 * The columns for Features like these: the registry's returned properties (typed by the
 * registry), its optional properties whether or not these have them, then `attributes` (known
 * before the Features: columnsOfTypes) and the attributes of any of the Features not among them
 * (attributeColumns). The Feature's own id is a column of the format's (FlatGeobuf leaves out an
 * attribute named id; CSV keeps it as a second id column).
 */
export function columnsOf (features: readonly OutFeature[], attributes: readonly Column[] = []): Column[] {
  const registry = SOURCE_PROPERTIES as Record<string, { type: PropertyType } | undefined>
  const first = features[0]
  // The registry's returned names only: an attribute may be named geometry (returned as the
  // Feature's own member, not a property), and is an attribute column like any other.
  const names = first?.properties != null
    ? Object.keys(first.properties).filter((name) => RESERVED_NAMES.has(name))
    : propertiesWhere((p) => p.returned === 'always').map(([name]) => name)
  for (const [name] of propertiesWhere((p) => p.returned === 'optional')) if (!names.includes(name)) names.push(name)
  const own = names.map((name) => ({ name, kind: kindOfType((registry[name] as { type: PropertyType }).type) }))
  return [...own, ...attributes, ...attributeColumns(features, new Set([...names, ...attributes.map((c) => c.name)]))]
}
