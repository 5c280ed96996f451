// The FlatGeobuf export reads each geometry from its WKB (flatgeobuf.ts parsedWkb, and
// wkbGeometry on the server backend's binary rows) where the items parse GeoJSON with the
// flatgeobuf package's parseGeometry: they must build the same bytes (the package's
// buildGeometry), for a Polygon, one with holes and a MultiPolygon with a hole, from WKB in
// either byte order; wkbGeometry also finds the geometry's box.
import t from 'tap'
import * as flatbuffers from 'flatbuffers'
import wkx from 'wkx'
import { buildGeometry } from 'flatgeobuf/lib/mjs/generic/geometry.js'
import { parseGeometry } from 'flatgeobuf/lib/mjs/geojson/geometry.js'
import { parsedWkb, wkbGeometry } from '../../src/features/formats/flatgeobuf.js'

type Geometry = Parameters<typeof parseGeometry>[0]
const geometries: Array<[string, Geometry]> = [
  ['a Polygon', { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]]] } as Geometry],
  ['a Polygon with two holes', { type: 'Polygon', coordinates: [[[-4, -1], [4, -1], [4, 4], [-4, -1]], [[1, 1], [2, 1], [2, 2], [1, 1]], [[3, 0.5], [3.5, 0.5], [3.5, 1], [3, 0.5]]] } as Geometry],
  ['a MultiPolygon, its second part with a hole', { type: 'MultiPolygon', coordinates: [[[[0, 0], [1, 0], [1, 1], [0, 0]]], [[[5, 5], [9, 5], [9, 9.5], [5, 5]], [[6, 6], [7, 6], [7, 7], [6, 6]]]] } as Geometry]
]

/** WKB in big-endian byte order (XDR), which wkx does not write: the same structure, each number swapped. */
function bigEndian (g: Geometry): Buffer {
  const polygon = (rings: number[][][]): Buffer[] => [Buffer.from([0]), u32(3), u32(rings.length), ...rings.flatMap((ring) => [u32(ring.length), ...ring.flatMap(([x, y]) => [f64(x as number), f64(y as number)])])]
  const u32 = (n: number): Buffer => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b }
  const f64 = (n: number): Buffer => { const b = Buffer.alloc(8); b.writeDoubleBE(n); return b }
  const c = g.coordinates as unknown
  return Buffer.concat(g.type === 'Polygon' ? polygon(c as number[][][]) : [Buffer.from([0]), u32(6), u32((c as number[][][][]).length), ...(c as number[][][][]).flatMap(polygon)])
}

for (const [name, g] of geometries) {
  t.test(name, async (t) => {
    const expected = new flatbuffers.Builder(64)
    expected.finish(buildGeometry(expected, parseGeometry(g)))
    for (const [order, wkb] of [['little-endian', wkx.Geometry.parseGeoJSON(g).toWkb()], ['big-endian', bigEndian(g)]] as const) {
      const b = new flatbuffers.Builder(64)
      const { parsed, type } = parsedWkb(wkb)
      b.finish(buildGeometry(b, parsed))
      t.same(Buffer.from(b.asUint8Array()), Buffer.from(expected.asUint8Array()), `${order}: the package's bytes`)
      t.equal(type, g.type, `${order}: its type`)
      // Straight from the WKB, at an offset in a larger buffer (a row's field).
      const direct = new flatbuffers.Builder(64)
      const box = [Infinity, Infinity, -Infinity, -Infinity]
      direct.finish(wkbGeometry(direct, Buffer.concat([Buffer.from('field before'), wkb, Buffer.from('after')]), 12, box))
      t.same(Buffer.from(direct.asUint8Array()), Buffer.from(expected.asUint8Array()), `${order}: wkbGeometry, the package's bytes`)
      const xs = (g.coordinates as unknown[]).flat(3) as number[]
      t.same(box, [Math.min(...xs.filter((_, i) => i % 2 === 0)), Math.min(...xs.filter((_, i) => i % 2 === 1)), Math.max(...xs.filter((_, i) => i % 2 === 0)), Math.max(...xs.filter((_, i) => i % 2 === 1))], `${order}: its box`)
    }
  })
}

t.test('another geometry type is refused', async (t) => {
  const point = wkx.Geometry.parseGeoJSON({ type: 'Point', coordinates: [1, 2] }).toWkb()
  t.throws(() => parsedWkb(point), /WKB geometry type 1/)
  t.throws(() => wkbGeometry(new flatbuffers.Builder(64), point, 0, [0, 0, 0, 0]), /WKB geometry type 1/)
})
