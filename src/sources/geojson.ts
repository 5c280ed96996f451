// The RFC 7946 rules a JSON schema cannot say (positions in range, rings closed, of a Polygon
// or of each part of a MultiPolygon), the client's id (a Feature's `id`, string or integer, or
// the property ?id_property= names), a GeoJSON 2008 `crs` member (CRS84 / EPSG:4326 only) and the
// date rules (datetime.ts), checked per feature with a JSON pointer for each problem. Structural
// problems are 400; well-formed but impossible data (start not before end, the same feature id
// twice with overlapping periods) is 422. ST_IsValid and the period window are checked by the
// database's constraints.
import type { Area } from '../db/ewkb.js'
import type { ErrorDetail } from '../errors.js'
import { attributesOf } from './attributes.js'
import { type ParsedDateTime, parseDateTime } from './datetime.js'
import type { FeatureCollection, FeatureInput } from './sources.schema.js'

/** A feature that passed every check: what the repository stores (with an id, as NewSource). */
export interface ValidFeature {
  index: number
  featureId: string
  /** The area as the client sent it, a Polygon or a MultiPolygon (positions checked); see db/ewkb.ts. */
  geometry: Area
  /** Normalised ISO 8601 with explicit offset, microsecond precision: safe to cast to timestamptz. */
  startAt: string
  endAt: string
  /** The attributes as JSON text of an object (attributes.ts). */
  attributes: string
}

export type CheckResult =
  | { ok: true, features: ValidFeature[] }
  | { ok: false, code: 'INVALID_GEOJSON' | 'ATTRIBUTES_TOO_LARGE' | 'INVALID_PERIOD' | 'DUPLICATE_FEATURE', details: ErrorDetail[] }

const MAX_DETAILS = 100

/**
 * What an out-of-range position that looks projected (a coordinate of a thousand or more: metres,
 * not degrees) most likely means: coordinates of another CRS sent without saying which.
 */
const projectedHint = (x: number, y: number): string => Math.max(Math.abs(x), Math.abs(y)) >= 1000
  ? ': these look like projected coordinates (metres); send the header Content-Crs naming their CRS, e.g. Content-Crs: <http://www.opengis.net/def/crs/EPSG/0/28992> (the CRSs served: /collections/sources, crs)'
  : ''

export function checkRings (rings: number[][][], base: string, details: ErrorDetail[]): void {
  rings.forEach((ring, r) => {
    ring.forEach((pos, p) => {
      const [lon, lat, alt] = pos as [number, number, number | undefined]
      // The pointer is made only for a position with a problem: one string per vertex was
      // garbage on every valid request (500,000 of them for 1,000 polygons of 500 vertices).
      if (!Number.isFinite(lon) || !Number.isFinite(lat) || (alt !== undefined && !Number.isFinite(alt))) {
        details.push({ pointer: `${base}/${r}/${p}`, message: 'must hold finite numbers' })
      } else if (lon < -180 || lon > 180) {
        details.push({ pointer: `${base}/${r}/${p}/0`, message: `longitude ${lon} is outside [-180, 180]${projectedHint(lon, lat)}` })
      } else if (lat < -90 || lat > 90) {
        details.push({ pointer: `${base}/${r}/${p}/1`, message: `latitude ${lat} is outside [-90, 90]${projectedHint(lon, lat)}` })
      }
    })
    const first = ring[0] as number[]
    const last = ring[ring.length - 1] as number[]
    if (first[0] !== last[0] || first[1] !== last[1] || (first[2] !== undefined && last[2] !== undefined && first[2] !== last[2])) {
      details.push({ pointer: `${base}/${r}`, message: `ring ${r === 0 ? '0 (exterior)' : `${r} (hole)`} is not closed: its last position must equal its first` })
    }
  })
}

/** checkRings on a Polygon, or on each part of a MultiPolygon (pointers …/coordinates/part/ring/…). */
export function checkArea (area: Area, base: string, details: ErrorDetail[]): void {
  if (area.type === 'Polygon') checkRings(area.coordinates, base, details)
  else area.coordinates.forEach((rings, part) => { checkRings(rings, `${base}/${part}`, details) })
}

const escape = (name: string): string => name.replace(/~/g, '~0').replace(/\//g, '~1')

/** What a feature without an id is told. */
const HOW_TO_GIVE_AN_ID = 'give each Feature an "id" (a string, or an integer), or name the property that holds it with ?id_property=<name>'

/**
 * The client's id of a feature: properties[idProperty] when the request names one (it wins over
 * the Feature's `id`), else its `id`. A string as it is; an integer as its decimal string (42 and
 * "42" are one id; -0 is 0); anything else a problem at its pointer.
 */
export function clientId (feature: FeatureInput, base: string, idProperty: string | undefined): { id: string } | ErrorDetail {
  const fromProperty = idProperty !== undefined
  const value: unknown = fromProperty ? (feature.properties as Record<string, unknown>)[idProperty] : feature.id
  const pointer = fromProperty ? `${base}/properties/${escape(idProperty)}` : `${base}/id`
  const what = fromProperty ? `the id property "${idProperty}"` : 'the id'
  if (value === undefined || value === null) {
    return {
      pointer,
      message: fromProperty
        ? `the feature has no property "${idProperty}" (named by id_property), or it is null: each feature needs its id there`
        : `the feature has no id: ${HOW_TO_GIVE_AN_ID}`
    }
  }
  if (typeof value === 'string') {
    if (value.length === 0 || value.length > 256) return { pointer, message: `${what} must be 1 to 256 characters long` }
    if (value.includes('\u0000')) return { pointer, message: `${what} must not contain the character U+0000 (a PostgreSQL text cannot hold it)` }
    return { id: value }
  }
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return { id: String(value) }
    if (!Number.isFinite(value)) return { pointer, message: `${what} is out of range: a numeric id must be an integer within ±(2^53 − 1); send a larger one as a string` }
    if (!Number.isInteger(value)) return { pointer, message: `${what} ${value} is not an integer: a numeric id must be an integer; send it as a string to keep it as written` }
    // Beyond ±(2^53 − 1) JSON.parse has already changed the digits (12345678901234567890 reads as 12345678901234567000).
    return { pointer, message: `${what} is beyond ±(2^53 − 1), where JSON numbers lose digits (it reads as ${String(value)}): send it as a string` }
  }
  return { pointer, message: `${what} must be a string or an integer, not ${Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`}` }
}

/**
 * The names a GeoJSON 2008 `crs` member may give for what RFC 7946 requires, longitude and
 * latitude on WGS 84: CRS84 and EPSG:4326 in the spellings GDAL, QGIS and others write (a GeoJSON
 * file's EPSG:4326 is longitude, latitude, as GDAL writes and reads it), compared without case.
 */
const WGS84_NAMES = new Set([
  'urn:ogc:def:crs:ogc:1.3:crs84', 'urn:ogc:def:crs:ogc::crs84', 'urn:ogc:def:crs:ogc:crs84', 'ogc:crs84', 'crs84',
  'http://www.opengis.net/def/crs/ogc/1.3/crs84', 'https://www.opengis.net/def/crs/ogc/1.3/crs84', 'http://www.opengis.net/def/crs/ogc/0/crs84',
  'urn:ogc:def:crs:epsg::4326', 'urn:ogc:def:crs:epsg:4326', 'epsg:4326', 'http://www.opengis.net/def/crs/epsg/0/4326',
  'https://www.opengis.net/def/crs/epsg/0/4326', 'http://www.opengis.net/gml/srs/epsg.xml#4326'
])

/** A `crs` member at `pointer`: nothing when absent or naming WGS 84 lon/lat, else the problem. */
export function checkCrs (crs: unknown, pointer: string): ErrorDetail | undefined {
  if (crs === undefined) return undefined
  const name = (crs as { type?: unknown, properties?: { name?: unknown } } | null)?.properties?.name
  if (crs !== null && typeof crs === 'object' && (crs as { type?: unknown }).type === 'name' && typeof name === 'string' && WGS84_NAMES.has(name.trim().toLowerCase())) return undefined
  const named = typeof name === 'string' ? `names the CRS "${name.slice(0, 200)}"` : 'does not name a CRS this service reads'
  return {
    pointer,
    message: `${named}: coordinates must be longitude, latitude in WGS 84 (RFC 7946), given without a crs member or with one naming urn:ogc:def:crs:OGC:1.3:CRS84 or EPSG:4326; reproject the file first (e.g. ogr2ogr -t_srs EPSG:4326)`
  }
}

/**
 * Checks every feature of an already schema-valid FeatureCollection. All 400 problems are
 * reported before any 413 (attributes too large) and 422 one: a request with both gets 400.
 */
export function checkFeatureCollection (fc: FeatureCollection, idProperty?: string): CheckResult {
  const structural: ErrorDetail[] = []
  const unprocessable: ErrorDetail[] = []
  const tooLarge: ErrorDetail[] = []
  const checked: ValidFeature[] = []
  const periods: Array<{ start: number, end: number }> = []
  // Collections tend to repeat the same few date-times: each distinct one is parsed once.
  const parsedDates = new Map<string, ParsedDateTime | string>()
  const parseDate = (text: string): ParsedDateTime | string => {
    let parsed = parsedDates.get(text)
    if (parsed === undefined) parsedDates.set(text, parsed = parseDateTime(text))
    return parsed
  }

  const crs = checkCrs(fc.crs, '/crs')
  if (crs !== undefined) structural.push(crs)
  const ids: string[] = []
  fc.features.forEach((feature, index) => {
    const before = structural.length
    const base = `/features/${index}`
    const resolved = clientId(feature, base, idProperty)
    const featureId = 'id' in resolved ? resolved.id : undefined
    const where = { feature_index: index, ...(featureId !== undefined ? { feature_id: featureId } : {}) }
    if (!('id' in resolved)) structural.push({ ...resolved, ...where })
    const featureCrs = checkCrs(feature.crs, `${base}/crs`)
    if (featureCrs !== undefined) structural.push({ ...featureCrs, ...where })
    const geometry = feature.geometry as Area
    const ringProblems: ErrorDetail[] = []
    checkArea(geometry, `${base}/geometry/coordinates`, ringProblems)
    structural.push(...ringProblems.map((d) => ({ ...d, ...where })))

    const attributes = attributesOf(feature.properties as Record<string, unknown>, `/features/${index}/properties`)
    if ('details' in attributes) (attributes.tooLarge ? tooLarge : structural).push(...attributes.details.map((d) => ({ ...d, ...where })))

    const start = parseDate(feature.properties.start_at)
    const end = parseDate(feature.properties.end_at)
    if (typeof start === 'string') structural.push({ pointer: `${base}/properties/start_at`, message: `start_at ${start}`, ...where })
    if (typeof end === 'string') structural.push({ pointer: `${base}/properties/end_at`, message: `end_at ${end}`, ...where })
    if (structural.length > before || featureId === undefined || typeof start === 'string' || typeof end === 'string' || !('text' in attributes)) return

    if (start.epochMicros >= end.epochMicros) {
      unprocessable.push({ pointer: `${base}/properties`, message: `start_at (${feature.properties.start_at}) must be strictly before end_at (${feature.properties.end_at})`, ...where })
    }
    ids[index] = featureId
    periods[index] = { start: start.epochMicros, end: end.epochMicros }
    checked.push({ index, featureId, geometry, startAt: start.iso, endAt: end.iso, attributes: attributes.text })
  })

  if (structural.length > 0) return { ok: false, code: 'INVALID_GEOJSON', details: structural.slice(0, MAX_DETAILS) }
  if (tooLarge.length > 0) return { ok: false, code: 'ATTRIBUTES_TOO_LARGE', details: tooLarge.slice(0, MAX_DETAILS) }
  if (unprocessable.length > 0) return { ok: false, code: 'INVALID_PERIOD', details: unprocessable.slice(0, MAX_DETAILS) }

  // The same client id twice in one request with overlapping periods would violate the
  // exclusion constraint against itself; say which two features clash.
  const byId = new Map<string, number[]>()
  ids.forEach((id, i) => { byId.set(id, [...(byId.get(id) ?? []), i]) })
  for (const indexes of byId.values()) {
    for (let a = 0; a < indexes.length; a++) {
      for (let b = a + 1; b < indexes.length; b++) {
        const i = indexes[a] as number; const j = indexes[b] as number
        const pi = periods[i]; const pj = periods[j]
        if (pi !== undefined && pj !== undefined && pi.start < pj.end && pj.start < pi.end) {
          unprocessable.push({ pointer: `/features/${j}/id`, message: `feature ${j} has the same id as feature ${i} and an overlapping period`, feature_index: j, feature_id: ids[j] as string })
        }
      }
    }
  }
  if (unprocessable.length > 0) return { ok: false, code: 'DUPLICATE_FEATURE', details: unprocessable.slice(0, MAX_DETAILS) }

  return { ok: true, features: checked }
}
