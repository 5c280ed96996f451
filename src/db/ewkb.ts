// Polygons → one EWKB MultiPolygon (SRID 4326), the binary form in which a whole collection
// travels to PostgreSQL as a single bytea parameter.

const WKB_POLYGON = 3
const WKB_MULTIPOLYGON = 6
const EWKB_SRID_FLAG = 0x20000000
const LITTLE_ENDIAN = 1

/**
 * A coordinate as stored. `+ 0` turns -0 into 0: the ring check compares with ===, for which -0
 * and 0 are equal, while PostGIS compares the bytes, so a ring from [0, 0] to [-0, 0] would be
 * "not closed" there. And a magnitude under 1e-100 degrees is 0: nothing on Earth is that close
 * to the equator or the prime meridian without being on it, and GEOS's overlay (conflict
 * detection) fails on such numbers in the embedded build, where the error is lost.
 */
const coordinate = (v: number): number => Math.abs(v) < 1e-100 ? 0 : v + 0

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
  // Header 13 bytes; per polygon: byte order, type, ring count (9); per ring: its count and 16
  // bytes a position.
  let size = 13
  for (const rings of polygons) {
    size += 9
    for (const ring of rings) size += 4 + 16 * ring.length
  }
  const out = Buffer.allocUnsafe(size)
  let at = out.writeUInt8(LITTLE_ENDIAN, 0)
  at = out.writeUInt32LE(WKB_MULTIPOLYGON | EWKB_SRID_FLAG, at)
  at = out.writeUInt32LE(4326, at)
  at = out.writeUInt32LE(polygons.length, at)
  for (const rings of polygons) {
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
  }
  if (at !== size) throw new Error(`multiPolygonEwkb: wrote ${at} of ${size} bytes`)
  return out
}
