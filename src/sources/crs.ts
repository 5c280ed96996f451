// The coordinate reference systems the service reads and writes in (OGC API – Features Part 2):
// CRS84 (what is stored: longitude, latitude on WGS 84), EPSG:4326 and those CRS_EPSG lists.
// PostGIS transforms (ST_Transform); this module knows, per CRS, its URI, its SRID, its axis
// order and its area of use.
//
// Axis order and area of use come from authority data, not a hand list: the Esri projection
// engine's tables (@esri/proj-codes: each CRS's WKT2 with its axes in order, and its extent in
// degrees). PostGIS cannot tell them: spatial_ref_sys holds WKT1, which leaves the axes out for
// EPSG:4326 and EPSG:3035, and PostGIS 3.3 has no postgis_srs(). PostGIS itself always works in
// x = east (longitude), y = north, so a CRS whose first axis points north or south (EPSG:4326,
// EPSG:3035, EPSG:31467) has its coordinates swapped (ST_FlipCoordinates) on the way out and in.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { ApiError, summarise } from '../errors.js'

export const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84'
export const EPSG_PREFIX = 'http://www.opengis.net/def/crs/EPSG/0/'

/** What the service needs of a CRS. */
export interface Crs {
  uri: string
  /** Its SRID in spatial_ref_sys (CRS84: 4326, in longitude, latitude). */
  srid: number
  /** Whether its first axis points north (or south): PostGIS's x, y are then swapped. */
  northFirst: boolean
  name: string
  /** Its area of use in degrees (west > east: it crosses the antimeridian). */
  area: { west: number, south: number, east: number, north: number }
}

/** How a Feature's geometry is written: CRS84 is undefined (as stored). */
export interface OutputCrs { srid: number, northFirst: boolean }

/** The output transform of a CRS (undefined for CRS84: the stored coordinates as they are). */
export const outputOf = (crs: Crs): OutputCrs | undefined => crs.uri === CRS84 ? undefined : { srid: crs.srid, northFirst: crs.northFirst }

export const crsHeader = (crs: Crs): string => `<${crs.uri}>`

interface EsriCrs { wkid: number, latestWkid: number, name: string, wkt2: string, authority?: string, extent?: Array<{ slat: number, nlat: number, llon: number, rlon: number }> }

/**
 * The Esri records of these EPSG codes. The two tables are large JSON files with one record per
 * `{ "wkid": N,` line: each record asked for is cut out of the text and parsed alone, because
 * parsing the whole tables would lengthen every start (sizes and cost: docs/performance.md,
 * "Figures behind the code"); a code only found as another's latestWkid falls back to parsing
 * the table.
 */
function esriRecords (codes: readonly number[]): Map<number, EsriCrs> {
  const require = createRequire(import.meta.url)
  const found = new Map<number, EsriCrs>()
  for (const [file, key] of [['pe_list_projcs.json', 'ProjectedCoordinateSystems'], ['pe_list_geogcs.json', 'GeographicCoordinateSystems']] as const) {
    const text = readFileSync(require.resolve(`@esri/proj-codes/${file}`), 'utf8')
    const missing = (): number[] => codes.filter((c) => !found.has(c))
    for (const code of missing()) {
      const start = text.indexOf(`{ "wkid": ${code},`)
      if (start < 0) continue
      const next = text.indexOf('{ "wkid":', start + 1)
      const record = text.slice(start, next < 0 ? text.lastIndexOf(']') : next).trim().replace(/,$/, '')
      found.set(code, JSON.parse(record) as EsriCrs)
    }
    if (missing().some((c) => text.includes(`"latestWkid": ${c},`))) {
      for (const r of (JSON.parse(text) as Record<string, EsriCrs[]>)[key] ?? []) {
        for (const code of missing()) if (r.latestWkid === code) found.set(code, r)
      }
    }
  }
  return found
}

/** The direction of the CRS's own first axis in its WKT2 (a projected CRS's come after its base CRS's). */
function firstAxisNorth (wkt2: string): boolean {
  const axes = [...wkt2.matchAll(/AXIS\["[^"]*",\s*(\w+)/g)].map((m) => (m[1] ?? '').toLowerCase())
  const own = axes.slice(-2)
  return own[0] === 'north' || own[0] === 'south'
}

/** The CRSs served: CRS84, EPSG:4326 and `codes`; throws naming a code the authority data does not know. */
export function crsCatalogue (codes: readonly number[]): CrsCatalogue {
  const key = codes.join(',')
  let catalogue = catalogues.get(key)
  if (catalogue === undefined) catalogues.set(key, catalogue = readCatalogue(codes))
  return catalogue
}

/** The catalogues made in this process, by their codes (each app of a test process reads the tables once). */
const catalogues = new Map<string, CrsCatalogue>()

function readCatalogue (codes: readonly number[]): CrsCatalogue {
  const all = [...new Set([4326, ...codes])]
  const records = esriRecords(all)
  const list: Crs[] = [{ uri: CRS84, srid: 4326, northFirst: false, name: 'WGS 84 (longitude, latitude)', area: { west: -180, south: -90, east: 180, north: 90 } }]
  for (const code of all) {
    const r = records.get(code)
    if (r === undefined) throw new Error(`EPSG:${code} is not a CRS the service knows (no such code in the EPSG data of @esri/proj-codes)`)
    const e = r.extent?.[0] ?? { slat: -90, nlat: 90, llon: -180, rlon: 180 }
    list.push({ uri: `${EPSG_PREFIX}${code}`, srid: code, northFirst: firstAxisNorth(r.wkt2), name: r.name, area: { west: e.llon, south: e.slat, east: e.rlon, north: e.nlat } })
  }
  return new CrsCatalogue(list)
}

/** The CRSs served, by URI. */
export class CrsCatalogue {
  private readonly byUri: Map<string, Crs>
  constructor (readonly list: readonly Crs[]) {
    this.byUri = new Map(list.map((c) => [c.uri, c]))
  }

  get uris (): string[] { return this.list.map((c) => c.uri) }

  /** The CRS a URI names (also as a safe CURIE [EPSG:28992] or an http: URI for https:), or undefined. */
  find (uri: string): Crs | undefined {
    const text = uri.trim().replace(/^<(.*)>$/, '$1')
    const curie = /^\[?(EPSG|OGC):(\w+)\]?$/i.exec(text)
    if (curie !== null) {
      const [, auth, code] = curie
      return this.byUri.get(auth?.toUpperCase() === 'OGC' ? (code?.toUpperCase() === 'CRS84' ? CRS84 : '') : `${EPSG_PREFIX}${code ?? ''}`)
    }
    return this.byUri.get(text.replace(/^https:/, 'http:'))
  }

  /** The message of a 400 for a CRS not served. */
  unknown (given: string): string {
    return `${JSON.stringify(given)} is not a CRS served here; one of: ${this.uris.join(', ')}`
  }

  /** The crs parameter of a read (undefined when absent); 400 listing those served when unknown. */
  read (text: string | undefined): Crs | undefined {
    if (text === undefined) return undefined
    const crs = this.find(text)
    if (crs !== undefined) return crs
    const details = [{ pointer: '?crs', message: this.unknown(text) }]
    throw new ApiError('VALIDATION_FAILED', summarise(details), { details })
  }
}

/** Whether lon/lat lies in the CRS's area of use (a margin of 1e-9 degrees for rounding). */
export function inArea (crs: Crs, lon: number, lat: number): boolean {
  const { west, south, east, north } = crs.area
  const eps = 1e-9
  if (lat < south - eps || lat > north + eps) return false
  return west <= east ? lon >= west - eps && lon <= east + eps : lon >= west - eps || lon <= east + eps
}
