// Tiles in the tests: the tile that holds a point, its bounds, and a tile decoded with
// @mapbox/vector-tile (the reference decoder, not ours) into GeoJSON in longitude/latitude.
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader as Pbf } from 'pbf'

export type TileZxy = [number, number, number]

/** The tile (z, x, y) that holds a point. */
export function tileOf (lon: number, lat: number, z: number): TileZxy {
  const n = 2 ** z
  const x = Math.floor(((lon + 180) / 360) * n)
  const r = (lat * Math.PI) / 180
  const y = Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)
  return [z, Math.min(n - 1, x), Math.min(n - 1, y)]
}

/** A tile's bounds in longitude/latitude: [west, south, east, north]. */
export function tileBounds ([z, x, y]: TileZxy): [number, number, number, number] {
  const n = 2 ** z
  const lat = (v: number): number => (Math.atan(Math.sinh(Math.PI * (1 - 2 * v))) * 180) / Math.PI
  return [(x / n) * 360 - 180, lat((y + 1) / n), ((x + 1) / n) * 360 - 180, lat(y / n)]
}

export const tileUrl = ([z, x, y]: TileZxy, query = ''): string => `/collections/sources/tiles/WebMercatorQuad/${z}/${y}/${x}${query}`

export interface Decoded { properties: Record<string, unknown>, geometry: { type: string, coordinates: unknown } }

export function decode (body: Buffer, tile: TileZxy, name = 'sources'): Decoded[] {
  const layer = new VectorTile(new Pbf(body)).layers[name]
  if (layer === undefined) return []
  const out: Decoded[] = []
  for (let i = 0; i < layer.length; i++) {
    const f = layer.feature(i)
    out.push({ properties: f.properties, geometry: f.toGeoJSON(tile[1], tile[2], tile[0]).geometry as Decoded['geometry'] })
  }
  return out
}
