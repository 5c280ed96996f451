// Areas → one EWKB geometry (SRID 4326), the binary form in which a whole collection travels to
// PostgreSQL as a single bytea parameter: a MultiPolygon when every area is a Polygon (ST_Dump
// gives them back as rows, one per area), a GeometryCollection of Polygons and MultiPolygons
// when any is multipart (ST_Dump then gives parts, which the repository groups back by area).

const WKB_POLYGON = 3
const WKB_MULTIPOLYGON = 6
const WKB_GEOMETRYCOLLECTION = 7
const EWKB_SRID_FLAG = 0x20000000
const LITTLE_ENDIAN = 1

/** A source's area as GeoJSON has it: a Polygon's rings, or a MultiPolygon's polygons' rings. */
export type Area =
  | { type: 'Polygon', coordinates: number[][][] }
  | { type: 'MultiPolygon', coordinates: number[][][][] }

/**
 * A coordinate as stored. `+ 0` turns -0 into 0: the ring check compares with ===, for which -0
 * and 0 are equal, while PostGIS compares the bytes, so a ring from [0, 0] to [-0, 0] would be
 * "not closed" there. And a magnitude under 1e-100 degrees is 0: nothing on Earth is that close
 * to the equator or the prime meridian without being on it, and GEOS's overlay (conflict
 * detection) fails on such numbers in the embedded build, where the error is lost.
 */
const coordinate = (v: number): number => Math.abs(v) < 1e-100 ? 0 : v + 0

/** Bytes of a Polygon without SRID: byte order, type, ring count (9); per ring its count and 16 bytes a position. */
function polygonSize (rings: number[][][]): number {
  let size = 9
  for (const ring of rings) size += 4 + 16 * ring.length
  return size
}

const areaSize = (area: Area): number => area.type === 'Polygon'
  ? polygonSize(area.coordinates)
  : area.coordinates.reduce((sum, rings) => sum + polygonSize(rings), 9)

function writePolygon (out: Buffer, at: number, rings: number[][][]): number {
  at = out.writeUInt8(LITTLE_ENDIAN, at)
  at = out.writeUInt32LE(WKB_POLYGON, at)
  at = out.writeUInt32LE(rings.length, at)
  for (const ring of rings) {
    at = out.writeUInt32LE(ring.length, at)
    for (const position of ring) {
      at = out.writeDoubleLE(coordinate(position[0] as number), at)
      at = out.writeDoubleLE(coordinate(position[1] as number), at)
    }
  }
  return at
}

/** A multi-geometry's header with SRID (13 bytes) when `srid`, else without (9). */
function writeHeader (out: Buffer, at: number, type: number, count: number, srid: boolean): number {
  at = out.writeUInt8(LITTLE_ENDIAN, at)
  at = out.writeUInt32LE(srid ? type | EWKB_SRID_FLAG : type, at)
  if (srid) at = out.writeUInt32LE(4326, at)
  return out.writeUInt32LE(count, at)
}

function writeArea (out: Buffer, at: number, area: Area): number {
  if (area.type === 'Polygon') return writePolygon(out, at, area.coordinates)
  at = writeHeader(out, at, WKB_MULTIPOLYGON, area.coordinates.length, false)
  for (const rings of area.coordinates) at = writePolygon(out, at, rings)
  return at
}

/**
 * One EWKB MultiPolygon (little endian, SRID 4326, altitude dropped) holding every polygon, in
 * order: a whole collection travels to PostgreSQL as one binary bytea parameter, and ST_Dump
 * gives its polygons back as rows. No hex string twice its size, no text-array escaping.
 *
 * Written straight into one buffer of the exact size. Byte for byte what wkx's
 * MultiPolygon#toEwkb writes (test/sources/ewkb.test.ts), without wkx's object per vertex and
 * buffer per polygon, whose allocation and garbage collection dominate a large collection.
 */
export function multiPolygonEwkb (polygons: number[][][][]): Buffer {
  const size = polygons.reduce((sum, rings) => sum + polygonSize(rings), 13)
  const out = Buffer.allocUnsafe(size)
  let at = writeHeader(out, 0, WKB_MULTIPOLYGON, polygons.length, true)
  for (const rings of polygons) at = writePolygon(out, at, rings)
  if (at !== size) throw new Error(`multiPolygonEwkb: wrote ${at} of ${size} bytes`)
  return out
}

/**
 * One EWKB GeometryCollection (SRID 4326, altitude dropped) of these areas, each a Polygon or a
 * MultiPolygon member as it is: ST_GeometryN(…, n) gives the n-th back whole, and ST_Dump its
 * polygons with paths {n} (a Polygon) or {n, part} (a MultiPolygon's part). Byte for byte what
 * wkx's GeometryCollection#toEwkb writes (test/sources/ewkb.test.ts).
 */
export function areasEwkb (areas: Area[]): Buffer {
  const size = areas.reduce((sum, area) => sum + areaSize(area), 13)
  const out = Buffer.allocUnsafe(size)
  let at = writeHeader(out, 0, WKB_GEOMETRYCOLLECTION, areas.length, true)
  for (const area of areas) at = writeArea(out, at, area)
  if (at !== size) throw new Error(`areasEwkb: wrote ${at} of ${size} bytes`)
  return out
}
