// The RFC 7946 and ISO 8601 rules a JSON schema cannot say, checked per feature with a JSON
// pointer for each problem, and the conversion of checked polygons to EWKB for PostGIS.
// Structural problems are 400; well-formed but impossible data (start not before end, the same
// feature id twice with overlapping periods) is 422. ST_IsValid and the period window are
// checked by the database's constraints.
import wkx from 'wkx'
import type { ErrorDetail } from '../errors.js'
import type { FeatureCollection } from './sources.schema.js'

export interface CheckedFeature {
  index: number
  featureId: string
  /** The polygon's rings as the client sent them (positions checked); see multiPolygonEwkb. */
  rings: number[][][]
  /** Normalised ISO 8601 with explicit offset, microsecond precision: safe to cast to timestamptz. */
  startAt: string
  endAt: string
}

export type CheckResult =
  | { ok: true, features: CheckedFeature[] }
  | { ok: false, code: 'INVALID_GEOJSON' | 'INVALID_PERIOD' | 'DUPLICATE_FEATURE', details: ErrorDetail[] }

const MAX_DETAILS = 100
const WKB_MULTIPOLYGON = 6
const EWKB_SRID_FLAG = 0x20000000

export interface ParsedDateTime { iso: string, epochMicros: number }

// YYYY-MM-DD, optionally followed by THH:MM[:SS[.fraction]] and a zone (Z or ±HH[:MM]).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/

function daysFromCivil (y: number, m: number, d: number): number {
  // Howard Hinnant's days_from_civil: days since 1970-01-01 in the proleptic Gregorian calendar.
  const yy = m <= 2 ? y - 1 : y
  const era = Math.floor(yy / 400)
  const yoe = yy - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

function daysInMonth (y: number, m: number): number {
  return [31, (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] as number
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0')

/** ISO 8601 date-time with Z or an offset, or a date alone (midnight UTC). Returns an error message otherwise. */
export function parseDateTime (text: string): ParsedDateTime | string {
  const m = DATE_TIME.exec(text)
  if (m === null) return 'must be an ISO 8601 date-time with Z or an offset (2024-05-01T12:00:00Z), or a date (2024-05-01)'
  const [, ys, mos, ds, hs, mis, ss, frac, z, sign, ohs, oms] = m
  const y = Number(ys); const mo = Number(mos); const d = Number(ds)
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return 'is not a calendar date'
  if (hs !== undefined && z === undefined && sign === undefined) {
    return 'has a time but no offset: add Z (UTC) or an offset such as +02:00'
  }
  const h = Number(hs ?? 0); const mi = Number(mis ?? 0); const s = Number(ss ?? 0)
  if (h > 23 || mi > 59 || s > 59) return 'has an out-of-range time of day'
  const micros = Number((frac ?? '').padEnd(6, '0').slice(0, 6))
  let offsetMinutes = 0
  let zone = 'Z'
  if (sign !== undefined) {
    const oh = Number(ohs); const om = Number(oms ?? 0)
    if (oh > 15 || om > 59) return 'has an out-of-range offset'
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om)
    zone = `${sign}${pad(oh)}:${pad(om)}`
  }
  const seconds = daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offsetMinutes * 60
  return {
    iso: `${pad(y, 4)}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}.${pad(micros, 6)}${zone}`,
    epochMicros: seconds * 1_000_000 + micros
  }
}

function checkRings (rings: number[][][], base: string, details: ErrorDetail[]): void {
  rings.forEach((ring, r) => {
    ring.forEach((pos, p) => {
      const [lon, lat, alt] = pos as [number, number, number | undefined]
      const at = `${base}/${r}/${p}`
      if (!Number.isFinite(lon) || !Number.isFinite(lat) || (alt !== undefined && !Number.isFinite(alt))) {
        details.push({ pointer: at, message: 'must hold finite numbers' })
      } else if (lon < -180 || lon > 180) {
        details.push({ pointer: `${at}/0`, message: `longitude ${lon} is outside [-180, 180]` })
      } else if (lat < -90 || lat > 90) {
        details.push({ pointer: `${at}/1`, message: `latitude ${lat} is outside [-90, 90]` })
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
 * One EWKB MultiPolygon (SRID 4326, altitude dropped) holding every polygon, in order: a whole
 * collection travels to PostgreSQL as one binary bytea parameter, and ST_Dump gives its polygons
 * back as rows. One buffer, no hex string twice its size, no text-array escaping or parsing.
 */
export function multiPolygonEwkb (polygons: number[][][][]): Buffer {
  // The EWKB header (little endian, MultiPolygon with the SRID flag, 4326, the count), then each
  // polygon's WKB from wkx. Byte for byte what wkx.MultiPolygon#toEwkb writes, 2–3× faster:
  // it sizes and copies every polygon twice.
  const header = Buffer.alloc(13)
  header.writeUInt8(1, 0)
  header.writeUInt32LE(WKB_MULTIPOLYGON | EWKB_SRID_FLAG, 1)
  header.writeUInt32LE(4326, 5)
  header.writeUInt32LE(polygons.length, 9)
  return Buffer.concat([header, ...polygons.map((rings) => {
    // `+ 0` turns -0 into 0: the ring check compares with ===, for which -0 and 0 are equal, while
    // PostGIS compares the bytes, so a ring from [0, 0] to [-0, 0] would be "not closed" there.
    const [outer, ...holes] = rings.map((ring) => ring.map((pos) => new wkx.Point((pos[0] as number) + 0, (pos[1] as number) + 0)))
    return new wkx.Polygon(outer, holes).toWkb()
  })])
}

/**
 * Checks every feature of an already schema-valid FeatureCollection. All 400 problems are
 * reported before any 422 one: a request with both gets 400.
 */
export function checkFeatureCollection (fc: FeatureCollection): CheckResult {
  const structural: ErrorDetail[] = []
  const unprocessable: ErrorDetail[] = []
  const checked: CheckedFeature[] = []
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
