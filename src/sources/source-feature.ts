// A stored source as the GeoJSON Feature every read returns (GET /sources/?id=, and each feature
// of the OGC API items), as JSON text.
import type { SourceRow } from './sources.repository.js'

/**
 * The GeoJSON Feature of a row as JSON text: the geometry is PostGIS's own ST_AsGeoJSON text,
 * spliced in rather than parsed and serialised again; every other field goes through
 * JSON.stringify. Its shape is SourceFeatureSchema's (test/sources/read-delete.test.ts checks
 * each field against the schema and the database).
 */
export function featureJson (row: SourceRow): string {
  const properties = {
    feature_id: row.feature_id,
    start_at: row.start_at,
    end_at: row.end_at,
    created_at: row.created_at,
    organisation: row.organisation,
    area_m2: row.area_m2
  }
  return `{"type":"Feature","id":${JSON.stringify(row.id)},"geometry":${row.geometry},"properties":${JSON.stringify(properties)}}`
}
