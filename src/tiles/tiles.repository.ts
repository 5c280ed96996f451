// The MVT query and the change counters of a tile, on PostGIS. The query is pg_tileserv's and
// martin's: ST_AsMVTGeom over ST_TileEnvelope, found with `geom &&` the tile's box in CRS84 (the
// query box is transformed, never the column, so the GiST index serves it). Two additions keep a
// zoomed-out tile useful and bounded: a source smaller than the mark cell (TILE_MARK_UNITS tile
// units) in both directions is drawn as that cell, one mark per cell for all the small sources
// in it (tippecanoe's tiny-polygon reduction: where data is and how dense it is stays visible),
// and at most `maxFeatures` features, the largest first.
import { type RawBuilder, sql } from 'kysely'
import type { Db, Scope } from '../db/database.js'
import { isoUtc } from '../db/postgis.js'
import { TILE_PROPERTIES, sourceRow, valueOf } from '../sources/source-properties.js'
import { BUFFER, EXTENT, MAX_LAT, type Tile, WORLD_M, changeCells, searchBox, tileSizeM } from './tile-matrix.js'

/** Side of a mark, in tile units: 2 screen pixels of a 256-pixel tile. */
export const TILE_MARK_UNITS = 32

export interface TileFilter {
  datetime?: { at?: string, from?: string, to?: string }
  /** An admin's organisation parameter. */
  organisation?: string
}

export interface TileInput { tile: Tile, scope: Scope, filter: TileFilter, maxFeatures: number }

function where (scope: Scope, filter: TileFilter): RawBuilder<unknown> {
  const parts: Array<RawBuilder<unknown>> = []
  if (scope !== 'all') parts.push(sql`s.organisation = ${scope.organisation}`)
  if (filter.organisation !== undefined) parts.push(sql`s.organisation = ${filter.organisation}`)
  const dt = filter.datetime
  if (dt?.at !== undefined) parts.push(sql`s.period @> ${dt.at}::timestamptz`)
  else if (dt?.from !== undefined || dt?.to !== undefined) parts.push(sql`s.period && tstzrange(${dt.from ?? null}::timestamptz, ${dt.to ?? null}::timestamptz, '[]')`)
  return parts.length === 0 ? sql`true` : sql.join(parts, sql` AND `)
}

// Web Mercator metres of a longitude and of a latitude (clamped at ±85.0511°), as SQL arithmetic:
// a source's size and place are read from its box without transforming the geometry.
const mercX = (lon: RawBuilder<unknown>): RawBuilder<number> => sql<number>`(${lon} * ${WORLD_M / 360}::float8)`
const mercY = (lat: RawBuilder<unknown>): RawBuilder<number> =>
  sql<number>`(6378137 * ln(tan(pi() / 4 + radians(greatest(${-MAX_LAT}::float8, least(${MAX_LAT}::float8, ${lat}))) / 2)))`

/**
 * The features of a tile in tile units, as the query draws them: their attributes (one column
 * each of TILE_PROPERTIES, null where a mark has none), how many sources each stands for, and
 * the geometry as GeoJSON in tile units (x east, y south), clipped to the buffer, on the unit grid.
 */
export type DrawnFeature = Record<string, string | number | boolean | null> & { count: string, geom: string }

/** How a mark standing for several small sources sums up each attribute. */
const MARK: Record<typeof TILE_PROPERTIES[number]['tiles'], (name: RawBuilder<unknown>) => RawBuilder<unknown>> = {
  single: (v) => sql`CASE WHEN count(*) = 1 THEN min(${v}) END`,
  min: (v) => sql`min(${v})`,
  max: (v) => sql`max(${v})`,
  sum: (v) => sql`sum(${v})`,
  any: (v) => sql`bool_or(${v})`
}
const names = TILE_PROPERTIES.map((p) => sql.ref(p.name))

/**
 * The tile as MVT made by PostGIS (empty when no source is drawn in it), how many features it
 * holds, and the change counters around it read in the same snapshot (its ETag, exact for
 * these bytes, in the same round trip).
 */
export function tileQuery (db: Db, input: TileInput) {
  return sql<{ mvt: Buffer | null, features: number, changes: string }>`${drawn(input, 'mvt')}
    SELECT ST_AsMVT(drawn, 'sources', ${EXTENT}::int, 'geom') AS mvt, count(*)::int AS features, (${changesSum(input.tile)}) AS changes
    FROM drawn WHERE geom IS NOT NULL`.execute(db)
}

/**
 * The same features with their geometry in tile units, for a PostGIS built without protobuf-c
 * (the embedded backend's), where ST_AsMVTGeom and ST_AsMVT are missing: mvt-encode.ts makes the
 * tile from these.
 */
export function tileFeaturesQuery (db: Db, input: TileInput) {
  return sql<DrawnFeature>`${drawn(input, 'geojson')} SELECT * FROM drawn WHERE geom IS NOT NULL`.execute(db)
}

/** Whether this PostGIS makes MVT itself (built with protobuf-c). */
export async function hasMvt (db: Db): Promise<boolean> {
  const { rows } = await sql<{ v: string }>`SELECT postgis_full_version() AS v`.execute(db)
  return /PROTOBUF=/.test(rows[0]?.v ?? '')
}

function drawn ({ tile, scope, filter, maxFeatures }: TileInput, output: 'mvt' | 'geojson') {
  const { z, x, y } = tile
  const [w, s, e, n] = searchBox(tile)
  const cell = (tileSizeM(z) * TILE_MARK_UNITS) / EXTENT
  const simplify = tileSizeM(z) / EXTENT / 2
  const half = WORLD_M / 2
  const xmin = sql`ST_XMin(s.geom)`
  const xmax = sql`ST_XMax(s.geom)`
  const ymin = sql`ST_YMin(s.geom)`
  const ymax = sql`ST_YMax(s.geom)`
  const row = sourceRow('s')
  const attributes = sql.join(TILE_PROPERTIES.map((p) => sql`${valueOf(p.name, row)} AS ${sql.ref(p.name)}`))
  // Drawn largest first (area_m2), ties by id: both are tile attributes.
  return sql<{ mvt: Buffer }>`
WITH hits AS (
  SELECT ${attributes}, s.geom,
         ${mercX(xmax)} - ${mercX(xmin)} < ${cell}::float8 AND ${mercY(ymax)} - ${mercY(ymin)} < ${cell}::float8 AS small,
         floor((${mercX(sql`(${xmin} + ${xmax}) / 2`)} + ${half}::float8) / ${cell}::float8) AS gx,
         floor((${mercY(sql`(${ymin} + ${ymax}) / 2`)} + ${half}::float8) / ${cell}::float8) AS gy
  FROM sources s
  WHERE s.geom && ST_MakeEnvelope(${w}::float8, ${s}::float8, ${e}::float8, ${n}::float8, 4326) AND ${where(scope, filter)}
), large AS (
  SELECT ${sql.join(names)}, 1::bigint AS count,
         ST_Simplify(ST_Transform(
           CASE WHEN ST_YMax(geom) > ${MAX_LAT}::float8 OR ST_YMin(geom) < ${-MAX_LAT}::float8
                THEN ST_ClipByBox2D(geom, ST_MakeEnvelope(-180, ${-MAX_LAT}::float8, 180, ${MAX_LAT}::float8, 4326)) ELSE geom END,
           3857), ${simplify}::float8, true) AS geom
  FROM hits WHERE NOT small
  ORDER BY area_m2 DESC, id LIMIT ${maxFeatures}
), marks AS (
  SELECT ${sql.join(TILE_PROPERTIES.map((p) => sql`${MARK[p.tiles](sql.ref(p.name))} AS ${sql.ref(p.name)}`))}, count(*) AS count,
         ST_MakeEnvelope(gx * ${cell}::float8 - ${half}::float8, gy * ${cell}::float8 - ${half}::float8,
                         (gx + 1) * ${cell}::float8 - ${half}::float8, (gy + 1) * ${cell}::float8 - ${half}::float8, 3857) AS geom
  FROM hits WHERE small
  GROUP BY gx, gy
  ORDER BY count(*) DESC, gx, gy LIMIT ${maxFeatures}
), drawn AS (
  SELECT ${sql.join(TILE_PROPERTIES.map((p) => p.type === 'timestamp' ? sql`${isoUtc(sql.ref(p.name))} AS ${sql.ref(p.name)}` : sql.ref(p.name)))}, count,
         ${output === 'mvt' ? sql`ST_AsMVTGeom(geom, ST_TileEnvelope(${z}::int, ${x}::int, ${y}::int), ${EXTENT}::int, ${BUFFER}::int, true)` : inTileUnits(tile)} AS geom
  FROM (SELECT *, 0 AS kind FROM large UNION ALL SELECT *, 1 AS kind FROM marks) AS f
  ORDER BY kind, area_m2 DESC LIMIT ${maxFeatures}
)`
}

/** ST_AsMVTGeom's work without it: to tile units (y down), clipped to the buffer, on the unit grid. */
export function inTileUnits ({ z, x, y }: Tile): RawBuilder<unknown> {
  const size = tileSizeM(z)
  const k = EXTENT / size
  const west = -WORLD_M / 2 + x * size
  const north = WORLD_M / 2 - y * size
  return sql`NULLIF(ST_AsGeoJSON(ST_RemoveRepeatedPoints(ST_SnapToGrid(ST_ClipByBox2D(
    ST_Affine(geom, ${k}::float8, 0, 0, ${-k}::float8, ${-west * k}::float8, ${north * k}::float8),
    ST_MakeEnvelope(${-BUFFER}::int, ${-BUFFER}::int, ${EXTENT + BUFFER}::int, ${EXTENT + BUFFER}::int, 3857)), 1)), 0), '{"type":"GeometryCollection","geometries":[]}')`
}

/**
 * The sum of the change counters around the tile (every counter zoom, the buffered tile's
 * cells): it grows with every write whose rows touch the tile, and only then.
 */
export async function tileChanges (db: Db, tile: Tile): Promise<string> {
  const { rows } = await sql<{ n: string }>`${changesSum(tile)}`.execute(db)
  return rows[0]?.n ?? '0'
}

/**
 * tileChanges of several tiles in one statement (a batch of requests, tiles.store.ts), one
 * answer per tile in order.
 */
export async function tilesChanges (db: Db, tiles: Tile[]): Promise<string[]> {
  const columns = tiles.map((tile, i) => sql`(${changesSum(tile)}) AS ${sql.ref(`c${i}`)}`)
  const { rows } = await sql<Record<string, string>>`SELECT ${sql.join(columns)}`.execute(db)
  return tiles.map((_, i) => rows[0]?.[`c${i}`] ?? '0')
}

function changesSum (tile: Tile): RawBuilder<string> {
  const ranges = changeCells(tile).map((c) =>
    sql`(z = ${c.z} AND x BETWEEN ${c.x0} AND ${c.x1} AND y BETWEEN ${c.y0} AND ${c.y1})`)
  return sql<string>`SELECT coalesce(sum(n), 0)::text AS n FROM tile_changes WHERE ${sql.join(ranges, sql` OR `)}`
}
