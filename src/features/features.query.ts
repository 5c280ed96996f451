// The query parameters of /collections/sources/items, parsed strictly: every bad value is a 400
// detail whose pointer names the parameter ("?bbox"), never a 500. The route schema has checked
// that only known parameters are present and that each is a single string.
import type { ErrorDetail } from '../errors.js'
import { parseDatetimeParameter } from '../sources/datetime.js'
import type { ListFilter, SortField } from '../sources/sources.listing.js'
import { searchBoxes } from '../sources/search-box.js'
import { SORTABLE, propertiesWhere } from '../sources/source-properties.js'
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
  sort: { field: SortField, descending: boolean }
  limit: number
  /** The sort key of the last row of the previous page. */
  after?: { value: string, id: string }
  /** WKT literals of the filter that PostGIS must find valid before the listing runs. */
  geometries: string[]
}

// %00 in a query string: no PostgreSQL text can hold it, so it can match nothing.
const NUL = '\u0000'
const NUL_MESSAGE = 'must not contain the character U+0000 (%00): no feature id or organisation can hold it'

// A plain decimal number: no hex, no "Infinity", no empty string (Number() takes all of those).
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

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
export function parseItemsQuery (q: ItemsQuery, isAdmin: boolean, declared: ReadonlyMap<string, AttributeType> = new Map()): { parsed: ParsedItems, details: ErrorDetail[] } {
  const details: ErrorDetail[] = []
  const filter: ListFilter = {}
  if (q.bbox !== undefined) filter.boxes = parseBbox(q.bbox, details)
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

  let sort: ParsedItems['sort'] = { field: 'id', descending: false }
  if (q.sortby !== undefined) {
    const m = /^([+-]?)([a-z_]+)$/.exec(q.sortby.trim())
    const field = m?.[2] as SortField | undefined
    if (m === null || field === undefined || !SORT_FIELDS.includes(field)) details.push({ pointer: '?sortby', message: `must be one of ${SORT_FIELDS.join(', ')}, with "-" in front for descending` })
    else sort = { field, descending: m[1] === '-' }
  }
  return { parsed: { filter, sort, limit, geometries }, details }
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
