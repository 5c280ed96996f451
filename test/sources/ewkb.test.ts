// multiPolygonEwkb and areasEwkb write what wkx's own writers write, holes and altitude included.
import t from 'tap'
import wkx from 'wkx'
import { areasEwkb, multiPolygonEwkb } from '../../src/db/ewkb.js'

t.test('byte for byte wkx.MultiPolygon#toEwkb, SRID 4326, altitude dropped', async (t) => {
  const polygons = [
    [[[0, 0], [1, 0], [1, 1], [0, 0]]],
    [[[10, 10, 5], [20, 10, 5], [20, 20, 5], [10, 20, 5], [10, 10, 5]], [[12, 12], [12, 14], [14, 14], [12, 12]]],
    [[[-180, -90], [180, -90], [180, 90], [-180, -90]]]
  ]
  const expected = new wkx.MultiPolygon(polygons.map((rings) => {
    const [outer, ...holes] = rings.map((ring) => ring.map((p) => new wkx.Point(p[0], p[1])))
    return new wkx.Polygon(outer, holes)
  }), 4326).toEwkb()
  const actual = multiPolygonEwkb(polygons)
  t.ok(actual.equals(expected), 'same bytes')
  const parsed = wkx.Geometry.parse(actual) as wkx.MultiPolygon
  t.equal(parsed.srid, 4326)
  t.equal(parsed.polygons.length, 3)
  t.equal(parsed.polygons[1]?.interiorRings.length, 1)
  t.equal(parsed.polygons[1]?.exteriorRing[0]?.z, undefined, 'no altitude')
})

t.test('byte for byte wkx on many polygons of every size, holes included', async (t) => {
  // A fixed pseudo-random sequence, so a failure reproduces.
  let seed = 7
  const random = (): number => { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
  const ring = (n: number, cx: number, cy: number, r: number): number[][] => {
    const points = Array.from({ length: n }, (_, i) => [cx + r * Math.cos(2 * Math.PI * i / n), cy + r * Math.sin(2 * Math.PI * i / n)])
    return [...points, points[0] as number[]]
  }
  const polygons = Array.from({ length: 200 }, (_, i) => {
    const cx = random() * 340 - 170; const cy = random() * 160 - 80
    const holes = i % 3 === 0 ? [ring(3 + Math.floor(random() * 20), cx, cy, 0.1)] : []
    return [ring(3 + Math.floor(random() * 600), cx, cy, 1), ...holes]
  })
  const expected = new wkx.MultiPolygon(polygons.map((rings) => {
    const [outer, ...holes] = rings.map((r) => r.map((p) => new wkx.Point(p[0], p[1])))
    return new wkx.Polygon(outer, holes)
  }), 4326).toEwkb()
  t.ok(multiPolygonEwkb(polygons).equals(expected), 'same bytes')
})

t.test('-0 and magnitudes under 1e-100 are written as 0', async (t) => {
  const ewkb = multiPolygonEwkb([[[[-0, 1e-101], [1, -0], [1, 1], [-1e-200, 0]]]])
  const expected = new wkx.MultiPolygon([new wkx.Polygon([[0, 0], [1, 0], [1, 1], [0, 0]].map(([x, y]) => new wkx.Point(x, y)))], 4326).toEwkb()
  t.ok(ewkb.equals(expected), 'same bytes as the zeros')
})

t.test('areasEwkb: byte for byte wkx.GeometryCollection#toEwkb of Polygons and MultiPolygons', async (t) => {
  const poly = (rings: number[][][]) => {
    const [outer, ...holes] = rings.map((ring) => ring.map((p) => new wkx.Point(p[0], p[1])))
    return new wkx.Polygon(outer, holes)
  }
  const a = [[[0, 0], [1, 0], [1, 1], [0, 0]]]
  const b = [[[10, 10, 5], [20, 10, 5], [20, 20, 5], [10, 10, 5]], [[12, 12], [12, 14], [14, 14], [12, 12]]]
  const areas = [
    { type: 'Polygon' as const, coordinates: a },
    { type: 'MultiPolygon' as const, coordinates: [a, b] },
    { type: 'MultiPolygon' as const, coordinates: [b] }
  ]
  const expected = new wkx.GeometryCollection([poly(a), new wkx.MultiPolygon([poly(a), poly(b)]), new wkx.MultiPolygon([poly(b)])], 4326).toEwkb()
  t.ok(areasEwkb(areas).equals(expected), 'same bytes')
  const parsed = wkx.Geometry.parse(areasEwkb(areas)) as wkx.GeometryCollection
  t.same(parsed.geometries.map((g) => g.constructor.name), ['Polygon', 'MultiPolygon', 'MultiPolygon'])
})
