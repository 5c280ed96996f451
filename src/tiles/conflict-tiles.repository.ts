// The conflicts tile layer: the overlaps of the caller's unresolved conflicts (admins: all) in a
// tile, each with the conflict's id, state and version, as the layer "conflicts". An overlap lies
// inside the caller's own source, so the layer shows nothing of the other party's area that
// GET /conflicts does not. Computed at read like GET /conflicts (the overlap of both sources);
// found by both sources' GiST index against the tile's box.
import { type RawBuilder, sql } from 'kysely'
import type { Db, Scope } from '../db/database.js'
import { BUFFER, EXTENT, MAX_LAT, type Tile, searchBox } from './tile-matrix.js'
import { inTileUnits } from './tiles.repository.js'
import type { DrawnFeature } from './tiles.repository.js'

/** The attributes of a feature of the layer "conflicts" (mvt-encode.ts's types). */
export const CONFLICT_TILE_PROPERTIES = [
  { name: 'id', type: 'string' }, { name: 'state', type: 'string' }, { name: 'version', type: 'integer' }
] as const

export interface ConflictTileInput { tile: Tile, scope: Scope, maxFeatures: number }

function drawn ({ tile, scope, maxFeatures }: ConflictTileInput, output: 'mvt' | 'geojson') {
  const { z, x, y } = tile
  const [w, s, e, n] = searchBox(tile)
  const env = sql`ST_MakeEnvelope(${w}::float8, ${s}::float8, ${e}::float8, ${n}::float8, 4326)`
  const scoped = scope === 'all' ? sql`true` : sql`(c.organisation_a = ${scope.organisation} OR c.organisation_b = ${scope.organisation})`
  const overlap = sql`lonlat_polygonal_overlay(sa.geom, sb.geom)`
  const mercator = sql`ST_Transform(ST_ClipByBox2D(${overlap}, ST_MakeEnvelope(-180, ${-MAX_LAT}::float8, 180, ${MAX_LAT}::float8, 4326)), 3857)`
  const geom: RawBuilder<unknown> = output === 'mvt'
    ? sql`ST_AsMVTGeom(f.geom, ST_TileEnvelope(${z}::int, ${x}::int, ${y}::int), ${EXTENT}::int, ${BUFFER}::int, true)`
    : inTileUnits(tile)
  return sql`WITH hits AS (
  SELECT c.id, c.state, c.version, ${mercator} AS geom
  FROM conflicts AS c JOIN sources AS sa ON sa.id = c.source_a JOIN sources AS sb ON sb.id = c.source_b
  WHERE c.resolved_at IS NULL AND ${scoped} AND sa.geom && ${env} AND sb.geom && ${env}
  ORDER BY c.overlap_m2 DESC, c.id LIMIT ${maxFeatures}
), drawn AS (
  SELECT f.id, f.state, f.version, ${geom} AS geom FROM hits AS f
)`
}

/** The layer as MVT made by PostGIS (null when nothing is drawn). */
export async function conflictTile (db: Db, input: ConflictTileInput): Promise<Buffer | null> {
  const { rows } = await sql<{ mvt: Buffer | null }>`${drawn(input, 'mvt')}
    SELECT ST_AsMVT(drawn, 'conflicts', ${EXTENT}::int, 'geom') AS mvt FROM drawn WHERE geom IS NOT NULL`.execute(db)
  return rows[0]?.mvt ?? null
}

/** The same features in tile units as GeoJSON, for mvt-encode.ts where PostGIS lacks ST_AsMVT. */
export async function conflictTileFeatures (db: Db, input: ConflictTileInput): Promise<DrawnFeature[]> {
  const { rows } = await sql<DrawnFeature>`${drawn(input, 'geojson')} SELECT * FROM drawn WHERE geom IS NOT NULL`.execute(db)
  return rows
}
