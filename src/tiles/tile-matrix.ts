// WebMercatorQuad arithmetic (pure): a tile's search box in CRS84, its size in metres, and the
// change-counter cells (sql/functions/tile_changes.sql) whose counts make its ETag.

export const MAX_ZOOM = 22
/** Zoom of the finest change counters (sql/016_tile_changes.sql). */
export const CHANGE_ZOOM = 8
export const EXTENT = 4096
/** Tile units drawn beyond each edge, so that strokes meet across tiles. */
export const BUFFER = 64
export const WORLD_M = 2 * Math.PI * 6378137
export const MAX_LAT = 85.0511287798066

export interface Tile { z: number, x: number, y: number }

/** A tile's width in Web Mercator metres. */
export const tileSizeM = (z: number): number => WORLD_M / 2 ** z

const latOf = (v: number): number => v <= 0 ? 90 : v >= 1 ? -90 : (Math.atan(Math.sinh(Math.PI * (1 - 2 * v))) * 180) / Math.PI

/**
 * The tile with its buffer as a box in CRS84, clamped to the world: longitudes to [-180, 180]
 * (a source is stored with longitudes in that range, so none lies beyond), and the top and bottom
 * rows reach the poles, so a polygon that goes past ±85.0511° is found and clipped there.
 */
export function searchBox ({ z, x, y }: Tile): [number, number, number, number] {
  const n = 2 ** z
  const m = BUFFER / EXTENT
  const u0 = (x - m) / n
  const u1 = (x + 1 + m) / n
  const v0 = (y - m) / n
  const v1 = (y + 1 + m) / n
  const lon = (u: number): number => Math.max(-180, Math.min(180, u * 360 - 180))
  return [lon(u0), latOf(v1), lon(u1), latOf(v0)]
}

/** Per counter zoom, the cells [x0, x1] × [y0, y1] that the buffered tile touches. */
export function changeCells ({ z, x, y }: Tile): Array<{ z: number, x0: number, x1: number, y0: number, y1: number }> {
  const n = 2 ** z
  const m = BUFFER / EXTENT
  const cells = []
  for (let l = 0; l <= CHANGE_ZOOM; l++) {
    const k = 2 ** l
    const at = (t: number): number => Math.max(0, Math.min(k - 1, Math.floor((t / n) * k)))
    cells.push({ z: l, x0: at(x - m), x1: at(x + 1 + m), y0: at(y - m), y1: at(y + 1 + m) })
  }
  return cells
}

/** A tile's size in pixels, as the tile matrix set defines it (OGC 2D-TMS's WebMercatorQuad). */
export const TILE_PIXELS = 256
/** The pixel size of OGC's standardized rendering (0.28 mm), which scale denominators assume. */
const STANDARD_PIXEL_M = 0.00028

/**
 * WebMercatorQuad as OGC Two Dimensional Tile Matrix Set 2.0 defines it (JSON encoding): one
 * matrix per zoom, 2^z × 2^z tiles of 256 pixels, origin at the top left corner of the world.
 */
export function webMercatorQuad () {
  const half = WORLD_M / 2
  return {
    id: 'WebMercatorQuad',
    title: 'Google Maps Compatible for the World',
    uri: 'http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad',
    crs: 'http://www.opengis.net/def/crs/EPSG/0/3857',
    orderedAxes: ['E', 'N'],
    wellKnownScaleSet: 'http://www.opengis.net/def/wkss/OGC/1.0/GoogleMapsCompatible',
    tileMatrices: Array.from({ length: MAX_ZOOM + 1 }, (_, z) => {
      const cellSize = WORLD_M / TILE_PIXELS / 2 ** z
      return {
        id: String(z),
        scaleDenominator: cellSize / STANDARD_PIXEL_M,
        cellSize,
        cornerOfOrigin: 'topLeft' as const,
        pointOfOrigin: [-half, half],
        tileWidth: TILE_PIXELS,
        tileHeight: TILE_PIXELS,
        matrixWidth: 2 ** z,
        matrixHeight: 2 ** z
      }
    })
  }
}
