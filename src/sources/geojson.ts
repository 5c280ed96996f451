// The RFC 7946 rules a JSON schema cannot say (positions in range, rings closed) and the date
// rules (datetime.ts), checked per feature with a JSON pointer for each problem. Structural
// problems are 400; well-formed but impossible data (start not before end, the same feature id
// twice with overlapping periods) is 422. ST_IsValid and the period window are checked by the
// database's constraints.
import type { ErrorDetail } from '../errors.js'
import { type ParsedDateTime, parseDateTime } from './datetime.js'
import type { FeatureCollection } from './sources.schema.js'

/** A feature that passed every check: what the repository stores (with an id, as NewSource). */
export interface ValidFeature {
  index: number
  featureId: string
  /** The polygon's rings as the client sent them (positions checked); see db/ewkb.ts. */
  rings: number[][][]
  /** Normalised ISO 8601 with explicit offset, microsecond precision: safe to cast to timestamptz. */
  startAt: string
  endAt: string
}

export type CheckResult =
  | { ok: true, features: ValidFeature[] }
  | { ok: false, code: 'INVALID_GEOJSON' | 'INVALID_PERIOD' | 'DUPLICATE_FEATURE', details: ErrorDetail[] }

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

/**
 * Checks every feature of an already schema-valid FeatureCollection. All 400 problems are
 * reported before any 422 one: a request with both gets 400.
 */
export function checkFeatureCollection (fc: FeatureCollection): CheckResult {
  const structural: ErrorDetail[] = []
  const unprocessable: ErrorDetail[] = []
  const checked: ValidFeature[] = []
  const periods: Array<{ start: number, end: number }> = []
  // Collections tend to repeat the same few date-times: each distinct one is parsed once.
  const parsedDates = new Map<string, ParsedDateTime | string>()
  const parseDate = (text: string): ParsedDateTime | string => {
    let parsed = parsedDates.get(text)
    if (parsed === undefined) parsedDates.set(text, parsed = parseDateTime(text))
    return parsed
  }

  fc.features.forEach((feature, index) => {
    const where = { feature_index: index, feature_id: feature.id }
    const before = structural.length
    if (feature.id.includes('\u0000')) {
      structural.push({ pointer: `/features/${index}/id`, message: 'must not contain the character U+0000 (a PostgreSQL text cannot hold it)', ...where })
    }
    const rings = feature.geometry.coordinates
    const ringProblems: ErrorDetail[] = []
    checkRings(rings, `/features/${index}/geometry/coordinates`, ringProblems)
    structural.push(...ringProblems.map((d) => ({ ...d, ...where })))

    const start = parseDate(feature.properties.start_at)
    const end = parseDate(feature.properties.end_at)
    if (typeof start === 'string') structural.push({ pointer: `/features/${index}/properties/start_at`, message: `start_at ${start}`, ...where })
    if (typeof end === 'string') structural.push({ pointer: `/features/${index}/properties/end_at`, message: `end_at ${end}`, ...where })
    if (structural.length > before || typeof start === 'string' || typeof end === 'string') return

    if (start.epochMicros >= end.epochMicros) {
      unprocessable.push({ pointer: `/features/${index}/properties`, message: `start_at (${feature.properties.start_at}) must be strictly before end_at (${feature.properties.end_at})`, ...where })
    }
    periods[index] = { start: start.epochMicros, end: end.epochMicros }
    checked.push({ index, featureId: feature.id, rings, startAt: start.iso, endAt: end.iso })
  })

  if (structural.length > 0) return { ok: false, code: 'INVALID_GEOJSON', details: structural.slice(0, MAX_DETAILS) }
  if (unprocessable.length > 0) return { ok: false, code: 'INVALID_PERIOD', details: unprocessable.slice(0, MAX_DETAILS) }

  // The same client id twice in one request with overlapping periods would violate the
  // exclusion constraint against itself; say which two features clash.
  const byId = new Map<string, number[]>()
  fc.features.forEach((f, i) => { byId.set(f.id, [...(byId.get(f.id) ?? []), i]) })
  for (const indexes of byId.values()) {
    for (let a = 0; a < indexes.length; a++) {
      for (let b = a + 1; b < indexes.length; b++) {
        const i = indexes[a] as number; const j = indexes[b] as number
        const pi = periods[i]; const pj = periods[j]
        if (pi !== undefined && pj !== undefined && pi.start < pj.end && pj.start < pi.end) {
          unprocessable.push({ pointer: `/features/${j}/id`, message: `feature ${j} has the same id as feature ${i} and an overlapping period`, feature_index: j, feature_id: fc.features[j]?.id as string })
        }
      }
    }
  }
  if (unprocessable.length > 0) return { ok: false, code: 'DUPLICATE_FEATURE', details: unprocessable.slice(0, MAX_DETAILS) }

  return { ok: true, features: checked }
}
