// The query parameters of /collections/sources/items, parsed strictly: every bad value is a 400
// detail whose pointer names the parameter ("?bbox"), never a 500. The route schema has checked
// that only known parameters are present and that each is a single string.
import type { ErrorDetail } from '../errors.js'
import { parseDatetimeParameter } from '../sources/datetime.js'
import { type ListFilter, type SortField, type SortKey, type SortValues, sortOrder } from '../sources/sources.listing.js'
import { searchBoxes } from '../sources/search-box.js'
import { type FeatureOutput, RETURNABLE, SORTABLE, propertiesWhere } from '../sources/source-properties.js'
import { CRS84 as CRS84_URI, type Crs, type CrsCatalogue, outputOf } from '../sources/crs.js'
import { CRS84, FILTER_LANGS, checkFilter } from './filters/cql2.js'
import type { AttributeType } from '../sources/attribute-schemas.js'
import type { FilterExpr } from '../sources/filter.sql.js'
import { FORMAT_NAMES } from './formats/format-names.js'

export const MAX_LIMIT = 10_000
export const DEFAULT_LIMIT = 100
export const SORT_FIELDS: readonly SortField[] = SORTABLE

export interface ItemsQuery {
  bbox?: string
  datetime?: string
  limit?: string
  cursor?: string
  sortby?: string
  properties?: string
  skipGeometry?: string
  crs?: string
  'bbox-crs'?: string
  organisation?: string
  filter?: string
  'filter-lang'?: string
  'filter-crs'?: string
  f?: string
  /** A queryable's own parameter (queryableTerms). */
  [queryable: string]: string | undefined
}

export interface ParsedItems {
  filter: ListFilter
  /** The order, made total (sortOrder: its last key is id). */
  sort: SortKey[]
  /** The CRS of the response (crs=; CRS84 by default) and what its Features hold. */
  crs: Crs
  output: FeatureOutput
  limit: number
  /** The sort values and id of the last row of the previous page. */
  after?: { values: SortValues, id: string }
  /** WKT literals of the filter that PostGIS must find valid before the listing runs. */
  geometries: string[]
}

// %00 in a query string: no PostgreSQL text can hold it, so it can match nothing.
const NUL = '\u0000'
const NUL_MESSAGE = 'must not contain the character U+0000 (%00): no feature id or organisation can hold it'

// A plain decimal number: no hex, no "Infinity", no empty string (Number() takes all of those).
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/**
 * A bbox given in another CRS (bbox-crs): EPSG:4326 (latitude first) is turned to CRS84's
 * order; a projected CRS's box, its corners in that CRS's axis order, is kept for
 * PostGIS to transform (sources.listing.ts).
 */
function parseCrsBbox (text: string, crs: Crs, filter: ListFilter, details: ErrorDetail[]): void {
  const parts = text.split(',')
  if (parts.length !== 4 || !parts.every((p) => DECIMAL.test(p.trim()))) {
    details.push({ pointer: '?bbox', message: `must be 4 numbers: the lower corner, then the upper, each in the axis order of ${crs.uri}` })
    return
  }
  const [a, b, c, d] = parts.map((p) => Number(p.trim()) + 0) as [number, number, number, number]
  if (![a, b, c, d].every(Number.isFinite)) {
    details.push({ pointer: '?bbox', message: 'must hold finite numbers' })
    return
  }
  // In PostGIS's x = east, y = north.
  const [minX, minY, maxX, maxY] = crs.northFirst ? [b, a, d, c] : [a, b, c, d]
  if (crs.srid === 4326) {
    filter.boxes = parseBbox([minX, minY, maxX, maxY].join(','), details)
    return
  }
  if (minX > maxX || minY > maxY) details.push({ pointer: '?bbox', message: 'the lower corner must not be above or right of the upper' })
  else filter.projectedBox = { srid: crs.srid, minX, minY, maxX, maxY }
}

function parseBbox (text: string, details: ErrorDetail[]): ListFilter['boxes'] {
  const parts = text.split(',')
  if (parts.length === 6) {
    details.push({ pointer: '?bbox', message: '6 numbers (a box with heights) are not supported: give minLon,minLat,maxLon,maxLat in CRS84' })
    return undefined
  }
  if (parts.length !== 4 || !parts.every((p) => DECIMAL.test(p.trim()))) {
    details.push({ pointer: '?bbox', message: 'must be 4 numbers: minLon,minLat,maxLon,maxLat (CRS84)' })
    return undefined
  }
  const [w, s, e, n] = parts.map((p) => Number(p.trim()) + 0) as [number, number, number, number]
  if (![w, s, e, n].every(Number.isFinite)) details.push({ pointer: '?bbox', message: 'must hold finite numbers' })
  else if ([w, e].some((x) => x < -180 || x > 180)) details.push({ pointer: '?bbox', message: 'longitudes must lie in [-180, 180]' })
  else if ([s, n].some((y) => y < -90 || y > 90)) details.push({ pointer: '?bbox', message: 'latitudes must lie in [-90, 90]' })
  else if (s > n) details.push({ pointer: '?bbox', message: `minLat (${s}) must not be above maxLat (${n})` })
  else return searchBoxes(w, s, e, n)
  return undefined
}

/** Parses the query; `details` is non-empty when anything is wrong (then the result is unused). */
export function parseItemsQuery (q: ItemsQuery, isAdmin: boolean, catalogue: CrsCatalogue, declared: ReadonlyMap<string, AttributeType> = new Map()): { parsed: ParsedItems, details: ErrorDetail[] } {
  const details: ErrorDetail[] = []
  const filter: ListFilter = {}
  const crs = parseCrs(q.crs, catalogue, '?crs', details)
  const bboxCrs = parseCrs(q['bbox-crs'], catalogue, '?bbox-crs', details)
  if (q.bbox !== undefined) {
    if (bboxCrs.uri === CRS84_URI) filter.boxes = parseBbox(q.bbox, details)
    else parseCrsBbox(q.bbox, bboxCrs, filter, details)
  } else if (q['bbox-crs'] !== undefined) details.push({ pointer: '?bbox-crs', message: 'names the CRS of bbox, which is missing' })
  if (q.datetime !== undefined) filter.datetime = parseDatetimeParameter(q.datetime, details)
  if (q.organisation !== undefined) {
    if (!isAdmin) details.push({ pointer: '?organisation', message: 'only admins may filter by organisation (others see their own)' })
    else if (q.organisation.includes(NUL)) details.push({ pointer: '?organisation', message: NUL_MESSAGE })
    else filter.organisation = q.organisation
  }
  const terms = queryableTerms(q, details)
  const geometries = parseFilterParams(q, filter, details, declared)
  if (terms.length > 0) filter.expr = { op: 'and', args: filter.expr === undefined ? terms : [...terms, filter.expr] }
  if (q.f !== undefined && !FORMAT_NAMES.includes(q.f)) details.push({ pointer: '?f', message: `must be one of ${FORMAT_NAMES.join(', ')}` })

  let limit = DEFAULT_LIMIT
  if (q.limit !== undefined) {
    if (!/^\d{1,15}$/.test(q.limit) || Number(q.limit) < 1) details.push({ pointer: '?limit', message: `must be a whole number from 1 to ${MAX_LIMIT} (larger values are lowered to ${MAX_LIMIT})` })
    else limit = Math.min(Number(q.limit), MAX_LIMIT)
  }

  const sort = sortOrder(q.sortby === undefined ? [] : parseSortby(q.sortby, details, declared))
  const output: FeatureOutput = { crs: outputOf(crs) }
  if (q.properties !== undefined) output.properties = parseNames(q.properties, [...RETURNABLE, ...declared.keys()], '?properties', 'returnable: /collections/sources/returnables', details)
  if (q.skipGeometry !== undefined) {
    if (q.skipGeometry !== 'true' && q.skipGeometry !== 'false') details.push({ pointer: '?skipGeometry', message: 'must be true or false' })
    else output.skipGeometry = q.skipGeometry === 'true'
  }
  return { parsed: { filter, sort, crs, output, limit, geometries }, details }
}

/** A CRS parameter (crs, bbox-crs): CRS84 when absent; a 400 listing those served when unknown. */
export function parseCrs (text: string | undefined, catalogue: CrsCatalogue, pointer: string, details: ErrorDetail[]): Crs {
  const crs = text === undefined ? catalogue.find(CRS84_URI) : catalogue.find(text)
  if (crs !== undefined) return crs
  details.push({ pointer, message: catalogue.unknown(text ?? '') })
  return catalogue.list[0] as Crs
}

/** A comma list of names, each one of `known`; unknown ones are named in one detail. */
function parseNames (text: string, known: readonly string[], pointer: string, what: string, details: ErrorDetail[]): string[] {
  const names = text.split(',').map((n) => n.trim()).filter((n) => n !== '')
  const unknown = names.filter((n) => !known.includes(n))
  if (unknown.length > 0) details.push({ pointer, message: `${unknown.map((n) => JSON.stringify(n)).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not ${what}; one of ${known.join(', ')}` })
  return names
}

/** sortby (OGC API – Features Part 8 / tipg): a comma list of sortables, each with "+" (ascending, the default) or "-" in front. */
function parseSortby (text: string, details: ErrorDetail[], declared: ReadonlyMap<string, AttributeType>): SortKey[] {
  const keys: SortKey[] = []
  const unknown: string[] = []
  for (const item of text.split(',')) {
    const m = /^([+-]?)(.+)$/.exec(item.trim())
    const field = m?.[2]?.trim() ?? item.trim()
    // The service's properties first; then the organisation's declared attributes, by their type.
    const as = SORT_FIELDS.includes(field) ? undefined : declared.get(field)
    if (m === null || (!SORT_FIELDS.includes(field) && as === undefined)) unknown.push(field)
    else if (keys.some((k) => k.field === field)) details.push({ pointer: '?sortby', message: `names ${field} twice` })
    else keys.push(as === undefined ? { field, descending: m[1] === '-' } : { field, descending: m[1] === '-', as })
  }
  if (unknown.length > 0) {
    const known = [...SORT_FIELDS, ...[...declared.keys()].filter((n) => !SORT_FIELDS.includes(n))]
    details.push({ pointer: '?sortby', message: `${unknown.map((n) => JSON.stringify(n)).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not sortable (/collections/sources/sortables); one of ${known.join(', ')}, each with "-" in front for descending` })
  }
  return keys
}

/** filter, filter-lang and filter-crs (OGC API – Features Part 3) into filter.expr; returns the WKT to validate. */
function parseFilterParams (q: ItemsQuery, filter: ListFilter, details: ErrorDetail[], declared: ReadonlyMap<string, AttributeType>): string[] {
  const lang = q['filter-lang'] ?? 'cql2-text'
  if (!(FILTER_LANGS as readonly string[]).includes(lang)) details.push({ pointer: '?filter-lang', message: `must be ${FILTER_LANGS.join(' or ')}` })
  const crs = q['filter-crs']
  if (crs !== undefined && crs !== CRS84) details.push({ pointer: '?filter-crs', message: `must be ${CRS84}: the filter's geometries are longitude, latitude in CRS84, the only CRS served` })
  if (q.filter === undefined || details.some((d) => d.pointer.startsWith('?filter-'))) return []
  const checked = checkFilter(q.filter, lang as typeof FILTER_LANGS[number], declared)
  if ('error' in checked) {
    details.push({ pointer: '?filter', message: checked.error })
    return []
  }
  filter.expr = checked.expr
  return checked.geometries
}

/** The queryables a query parameter may name: every one but the geometry. */
const QUERYABLE_PARAMETERS = propertiesWhere((p) => p.queryable && p.type !== 'geometry')

/**
 * Each queryable given as a query parameter (OGC API – Features Part 3, queryables as query
 * parameters), as the CQL2 comparison it stands for: equality for a string, a number or a
 * boolean; for a timestamp, equality with an instant or, with an interval as `datetime` takes
 * it, the closed interval (an open end unbounded). ANDed with the other parameters and the filter.
 */
function queryableTerms (q: ItemsQuery, details: ErrorDetail[]): FilterExpr[] {
  const terms: FilterExpr[] = []
  for (const [name, p] of QUERYABLE_PARAMETERS) {
    const text = q[name]
    if (text === undefined) continue
    const pointer = `?${name}`
    const property = { property: name }
    if (p.type === 'timestamp') {
      const dt = parseDatetimeParameter(text, details, pointer)
      if (dt?.at !== undefined) terms.push({ op: 'compare', cmp: '=', args: [property, { timestamp: dt.at }] })
      if (dt?.from !== undefined) terms.push({ op: 'compare', cmp: '>=', args: [property, { timestamp: dt.from }] })
      if (dt?.to !== undefined) terms.push({ op: 'compare', cmp: '<=', args: [property, { timestamp: dt.to }] })
    } else if (p.type === 'boolean') {
      if (text !== 'true' && text !== 'false') details.push({ pointer, message: 'must be true or false' })
      else terms.push({ op: 'compare', cmp: '=', args: [property, { boolean: text === 'true' }] })
    } else if (p.type === 'integer' || p.type === 'number') {
      const n = Number(text) + 0
      if (!DECIMAL.test(text.trim()) || !Number.isFinite(n)) details.push({ pointer, message: `must be a finite decimal number (${name} is ${p.type === 'integer' ? 'an integer' : 'a number'})` })
      else terms.push({ op: 'compare', cmp: '=', args: [property, { number: n }] })
    } else if (text.includes(NUL)) {
      details.push({ pointer, message: NUL_MESSAGE })
    } else {
      terms.push({ op: 'compare', cmp: '=', args: [property, { text }] })
    }
  }
  return terms
}
