// A stored source as the GeoJSON Feature GET /sources/?id= and /collections/sources/items/{id}
// return, as JSON text. Listings make the same Feature in PostgreSQL (sources.listing.ts
// featureText; test/sources/conflicts.test.ts compares the two).
import { CONFLICTS_LISTED, type Conflict, type SourceRow, type VersionRow } from './sources.repository.js'

/** The conflicts as the API lists them: the first CONFLICTS_LISTED, and the total beyond that. */
export function conflictsOf (row: Pick<SourceRow, 'conflicts'>): { conflicts: Conflict[], total?: number } {
  if (row.conflicts === null) return { conflicts: [] }
  const list = row.conflicts.list.slice(0, CONFLICTS_LISTED)
  const conflicts = list.map(([id, overlapM2, overlapRatio, start, end]) => ({ id, overlap_m2: overlapM2, overlap_ratio: overlapRatio, overlap_start: start, overlap_end: end }))
  return row.conflicts.total === null ? { conflicts } : { conflicts, total: Number(row.conflicts.total) }
}

/**
 * The GeoJSON Feature of a row as JSON text: the geometry is PostGIS's own ST_AsGeoJSON text,
 * spliced in rather than parsed and serialised again; every other field goes through
 * JSON.stringify. Its shape is SourceFeatureSchema's (test/sources/read-delete.test.ts checks
 * each field against the schema and the database).
 */
export function featureJson (row: SourceRow): string {
  const { conflicts, total } = conflictsOf(row)
  const properties = {
    feature_id: row.feature_id,
    start_at: row.start_at,
    end_at: row.end_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    version: row.version,
    organisation: row.organisation,
    area_m2: row.area_m2,
    conflict: conflicts.length > 0,
    conflicts,
    ...(total !== undefined ? { conflicts_total: total } : {})
  }
  return `{"type":"Feature","id":${JSON.stringify(row.id)},"geometry":${row.geometry},"properties":${JSON.stringify(properties)}}`
}

/** The weak ETag of a source's version (RFC 9110): it changes exactly when the source does. */
export const etagOf = (version: number): string => `W/"${version}"`

/**
 * A version of a source (source_versions) as a GeoJSON Feature: the source as it was, without
 * conflicts (they are not versioned: each is decided against the sources of its time).
 */
export function versionFeature (row: VersionRow): { type: 'Feature', id: string, geometry: { type: 'Polygon', coordinates: number[][][] }, properties: VersionProperties } {
  return {
    type: 'Feature',
    id: row.id,
    geometry: JSON.parse(row.geometry),
    properties: {
      feature_id: row.feature_id,
      start_at: row.start_at,
      end_at: row.end_at,
      created_at: row.created_at,
      updated_at: row.recorded_at,
      version: row.version,
      organisation: row.organisation,
      area_m2: row.area_m2
    }
  }
}

export interface VersionProperties { feature_id: string, start_at: string, end_at: string, created_at: string, updated_at: string, version: number, organisation: string, area_m2: number }
