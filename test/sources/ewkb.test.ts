// multiPolygonEwkb writes what wkx's own MultiPolygon writer writes, holes and altitude included.
import t from 'tap'
import wkx from 'wkx'
import { multiPolygonEwkb } from '../../src/db/ewkb.js'

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
