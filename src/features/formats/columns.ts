// The columns of a table-shaped format (CSV, FlatGeobuf), made generically from the Features
// themselves: every property the first Feature returns, typed by the property registry where it
// names it (source-properties.ts) and by its JSON value otherwise, then the registry's optional
// properties (present only on some Features). So a property added to the registry, or returned
// by a later change, becomes a column without more code here.
import { propertiesWhere, type PropertyType, SOURCE_PROPERTIES } from '../../sources/source-properties.js'

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
 * An attribute's column kind, from the first Feature's value. A number is a double (FlatGeobuf's
 * Double, GDAL's Real), even when that first value is whole: a later Feature's 1.5 in a column
 * typed from a first 0 would not fit a 64-bit integer (GDAL's GeoJSON reader widens such a field
 * to Real for the same reason), and every safe integer is a double exactly.
 */
function kindOfValue (v: unknown): ColumnKind {
  if (typeof v === 'boolean') return 'boolean'
  if (typeof v === 'number') return 'number'
  if (typeof v === 'string') return 'string'
  return 'json'
}

/** The columns for Features like `first` (the registry's returned properties when there is none). */
export function columnsOf (first: OutFeature | undefined): Column[] {
  const registry = SOURCE_PROPERTIES as Record<string, { type: PropertyType } | undefined>
  const names = first?.properties != null
    ? Object.keys(first.properties)
    : propertiesWhere((p) => p.returned === 'always').map(([name]) => name)
  for (const [name] of propertiesWhere((p) => p.returned === 'optional')) if (!names.includes(name)) names.push(name)
  return names.map((name) => {
    const known = Object.hasOwn(registry, name) ? registry[name] : undefined
    return { name, kind: known !== undefined ? kindOfType(known.type) : kindOfValue(first?.properties?.[name]) }
  })
}
