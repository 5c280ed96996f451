// MultiPolygons (issue 45, point 3): accepted wherever a Polygon is (POST on both paths, PUT,
// PATCH), stored and returned as sent (a Polygon stays a Polygon, a one-part MultiPolygon stays a
// MultiPolygon), areas summed over the parts, conflicts found through any part, drawn in tiles,
// listed by items and CQL2's spatial functions, kept by versions; an invalid part is a 422
// naming the part and the ring.
import t from 'tap'
import { sql } from 'kysely'
import { Value } from '@sinclair/typebox/value'
import { SourceFeatureSchema, VersionsResponseSchema } from '../../src/sources/source-feature.schema.js'
import { build, collection, expectError, feature, session, square } from '../helper.js'
import { decode, tileOf, tileUrl } from '../tiles/mvt.js'

const ctx = await build(t)
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-a')
const other = await session(ctx, 'editor', 'org-b')

const multi = (id: string, parts: number[][][][], extra: { start?: string, end?: string } = {}) =>
  ({ ...feature(id, extra), geometry: { type: 'MultiPolygon', coordinates: parts } })
const post = (payload: unknown, headers = editor.headers, url = '/sources') => app.inject({ method: 'POST', url, headers, payload: payload as object })
const get = (url: string, headers = editor.headers) => app.inject({ method: 'GET', url, headers })
const created = (res: { statusCode: number, body: string, json: () => unknown }): string[] => {
  if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`)
  return (res.json() as { sources: Array<{ id: string }> }).sources.map((s) => s.id)
}
const geometryOf = async (id: string) => {
  const res = await get(`/sources/?id=${id}`)
  t.ok(Value.Check(SourceFeatureSchema, res.json()), 'a Feature true to its schema')
  return res.json().geometry as { type: string, coordinates: unknown }
}

// Two parts 3° apart, the second with a hole.
const parts = [square(60, 10)[0] as number[][], [[64, 10], [66, 10], [66, 12], [64, 12], [64, 10]]]
const twoParts = [[parts[0] as number[][]], [parts[1] as number[][], [[64.5, 10.5], [64.5, 11], [65, 11], [65, 10.5], [64.5, 10.5]]]]

t.test('a collection of Polygons and MultiPolygons: each stored and returned as sent, areas summed', async (t) => {
  const ids = created(await post(collection(
    feature('plain', { coordinates: square(70, 10) }),
    multi('two-parts', twoParts),
    multi('one-part', [square(72, 10)]),
    feature('plain-2', { coordinates: square(74, 10) }))))
  t.equal(ids.length, 4)
  t.same(await geometryOf(ids[0] as string), { type: 'Polygon', coordinates: square(70, 10) }, 'a Polygon stays a Polygon')
  t.same(await geometryOf(ids[1] as string), { type: 'MultiPolygon', coordinates: twoParts }, 'parts and holes in order')
  t.same(await geometryOf(ids[2] as string), { type: 'MultiPolygon', coordinates: [square(72, 10)] }, 'a one-part MultiPolygon stays one')
  t.same(await geometryOf(ids[3] as string), { type: 'Polygon', coordinates: square(74, 10) })

  const { rows } = await sql<{ id: string, type: string, area: number, parts: number }>`
    SELECT id, ST_GeometryType(geom) AS type, area_m2 AS area, (SELECT sum(lonlat_area_m2(d.geom)) FROM ST_Dump(geom) AS d) AS parts
    FROM sources WHERE id = any(${ids}::text[]) ORDER BY feature_id`.execute(db)
  t.same(rows.map((r) => r.type).sort(), ['ST_MultiPolygon', 'ST_MultiPolygon', 'ST_Polygon', 'ST_Polygon'])
  for (const r of rows) t.ok(Math.abs(r.area - r.parts) < 1e-6 * r.area, `${r.id}: area_m2 is the sum of its parts' areas`)
  const read = (await get(`/sources/?id=${ids[1] as string}`)).json()
  t.ok(read.properties.area_m2 > 2 * (await get(`/sources/?id=${ids[0] as string}`)).json().properties.area_m2, 'the two-part area is larger than one part')
})

t.test('the OGC POST takes a MultiPolygon Feature; items and CQL2 spatial filters list it', async (t) => {
  const [id] = created(await post({ ...multi('ogc-multi', [square(80, 20), square(83, 20)]) }, editor.headers, '/collections/sources/items'))
  const inBox = await get('/collections/sources/items?bbox=82.5,19.5,84.5,21.5')
  t.equal(inBox.statusCode, 200)
  const found = inBox.json().features.find((f: { id: string }) => f.id === id)
  t.match(found, { geometry: { type: 'MultiPolygon' } }, 'found by a bbox touching its second part only')
  const filtered = await get(`/collections/sources/items?filter=${encodeURIComponent('S_INTERSECTS(geometry, POINT(83.5 20.5))')}`)
  t.equal(filtered.statusCode, 200)
  t.same(filtered.json().features.map((f: { id: string }) => f.id), [id], 'S_INTERSECTS through its second part')
  const between = await get(`/collections/sources/items?filter=${encodeURIComponent('S_INTERSECTS(geometry, POINT(82 20.5))')}`)
  t.same(between.json().features.map((f: { id: string }) => f.id), [], 'not between its parts')
  const within = await get(`/collections/sources/items?filter=${encodeURIComponent('S_WITHIN(geometry, POLYGON((79 19, 85 19, 85 22, 79 22, 79 19)))')}`)
  t.same(within.json().features.map((f: { id: string }) => f.id), [id], 'S_WITHIN of the whole')
})

t.test('conflicts: through any part, across organisations, with the overlap of that part', async (t) => {
  const [mine] = created(await post(collection(multi('claims-two', [square(100, 30), square(103, 30)]))))
  const res = await post(collection(feature('overlaps-second', { coordinates: square(103.5, 30) })), other.headers)
  t.equal(res.statusCode, 201)
  t.same(res.json().sources[0].conflicts, [mine], 'the Polygon conflicts with the MultiPolygon through its second part')
  const mineRead = (await get(`/sources/?id=${mine as string}`)).json()
  t.equal(mineRead.properties.conflict, true)
  const overlap = mineRead.properties.conflicts[0]
  t.ok(overlap.overlap_ratio > 0.2 && overlap.overlap_ratio < 0.3, `half of one of two equal parts: a quarter (${String(overlap.overlap_ratio)})`)
  const clear = await post(collection(multi('between', [square(101.5, 30, 0.5), square(102.2, 30, 0.5)])), other.headers)
  t.same(clear.json().sources[0].conflicts, [], 'parts between the other\'s parts conflict with nothing')
})

t.test('tiles draw every part of a MultiPolygon', async (t) => {
  created(await post(collection(multi('tiled', [square(120, 40, 0.2), square(120.5, 40, 0.2)]))))
  const tile = tileOf(120.3, 40.1, 6)
  const res = await get(tileUrl(tile))
  t.equal(res.statusCode, 200)
  const drawn = decode(res.rawPayload, tile).filter((f) => f.properties.feature_id === 'tiled')
  t.equal(drawn.length, 1)
  t.equal(drawn[0]?.geometry.type, 'MultiPolygon', 'one feature of two parts')
  t.equal((drawn[0]?.geometry.coordinates as unknown[]).length, 2)
})

t.test('PUT and PATCH change the type either way; versions keep each as it was', async (t) => {
  const [id] = created(await post(collection(feature('changes', { coordinates: square(140, 0) }))))
  const url = `/sources/?id=${id as string}`
  const put = await app.inject({ method: 'PUT', url, headers: { ...editor.headers, 'if-match': 'W/"1"' }, payload: multi('changes', [square(140, 0), square(142, 0)]) })
  t.equal(put.statusCode, 200, put.body)
  t.equal((await geometryOf(id as string)).type, 'MultiPolygon')
  // Coordinates alone: four arrays deep, a MultiPolygon's.
  const patch = (payload: unknown, version: number) => app.inject({ method: 'PATCH', url, headers: { ...editor.headers, 'content-type': 'application/merge-patch+json', 'if-match': `W/"${version}"` }, payload: payload as object })
  const patched = await patch({ geometry: { coordinates: [square(141, 0), square(143, 0), square(145, 0)] } }, 2)
  t.equal(patched.statusCode, 200, patched.body)
  t.same(await geometryOf(id as string), { type: 'MultiPolygon', coordinates: [square(141, 0), square(143, 0), square(145, 0)] })
  // Three arrays deep: a Polygon again.
  t.equal((await patch({ geometry: { coordinates: square(146, 0) } }, 3)).statusCode, 200)
  t.same(await geometryOf(id as string), { type: 'Polygon', coordinates: square(146, 0) })
  t.equal((await patch({ geometry: { type: 'MultiPolygon', coordinates: [square(147, 0)] } }, 4)).statusCode, 200)
  t.equal((await geometryOf(id as string)).type, 'MultiPolygon', 'a type named is the type kept')
  const wrong = expectError(t, await patch({ geometry: { type: 'Point', coordinates: [1, 2] } }, 5), 400, 'INVALID_GEOJSON')
  t.equal(wrong.details?.[0]?.pointer, '/geometry/type')
  const open = expectError(t, await patch({ geometry: { coordinates: [square(141, 0), [[[0, 0], [1, 0], [1, 1], [0, 1]]]] } }, 5), 400, 'INVALID_GEOJSON')
  t.equal(open.details?.[0]?.pointer, '/geometry/coordinates/1/0', 'an open ring of part 1')

  const versions = await get(`/sources/versions?id=${id as string}`)
  t.ok(Value.Check(VersionsResponseSchema, versions.json()))
  t.same(versions.json().versions.map((v: { feature: { geometry: { type: string } } }) => v.feature.geometry.type),
    ['MultiPolygon', 'Polygon', 'MultiPolygon', 'MultiPolygon', 'Polygon'], 'newest first, each version of the type it had')
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM sources_as_of(now()) WHERE id = ${id as string} AND ST_GeometryType(geom) = 'ST_MultiPolygon'`.execute(db)
  t.equal(rows[0]?.n, 1, 'sources_as_of returns the MultiPolygon')
})

t.test('422: an invalid part or the invalid whole, named by part and ring', async (t) => {
  const bowtie = [[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]
  const res = await post(collection(feature('fine', { coordinates: square(160, 0) }), multi('bad-part', [square(150, 0), [bowtie.map(([x, y]) => [(x as number) + 155, y as number])]])))
  const body = expectError(t, res, 422, 'INVALID_GEOMETRY')
  t.match(body.details, [{ pointer: '/features/1/geometry/coordinates/1/0', feature_index: 1, feature_id: 'bad-part', part: 1, ring: 0, reason: /Self-intersection/ }])
  t.match(body.message, /part 1, ring 0/)

  const overlapping = expectError(t, await post(collection(multi('parts-overlap', [square(150, 5, 2), square(151, 6, 2)]))), 422, 'INVALID_GEOMETRY')
  t.match(overlapping.details?.[0], { pointer: /^\/features\/0\/geometry\/coordinates\/[01]\/0$/, reason: /Self-intersection/ }, 'overlapping parts: the whole is invalid')

  const ogc = expectError(t, await app.inject({ method: 'POST', url: '/collections/sources/items', headers: editor.headers, payload: multi('bad', [square(150, 0), [bowtie]]) }), 422, 'INVALID_GEOMETRY')
  t.equal(ogc.details?.[0]?.pointer, '/features/0/geometry/coordinates/1/0')

  const [id] = created(await post(collection(feature('to-break', { coordinates: square(170, 0) }))))
  const put = expectError(t, await app.inject({ method: 'PUT', url: `/sources/?id=${id as string}`, headers: { ...editor.headers, 'if-match': '*' }, payload: multi('to-break', [square(150, 0), [bowtie]]) }), 422, 'INVALID_GEOMETRY')
  t.equal(put.details?.[0]?.pointer, '/geometry/coordinates/1/0', 'PUT: the pointer into the Feature')
  t.equal((await sql<{ n: number }>`SELECT count(*)::int AS n FROM sources WHERE feature_id IN ('bad-part', 'fine', 'parts-overlap', 'bad')`.execute(db)).rows[0]?.n, 0, 'nothing stored')
})

t.test('400: structure of a MultiPolygon, with pointers', async (t) => {
  const cases: Array<[string, unknown, string, RegExp]> = [
    ['a Point', { type: 'Point', coordinates: [1, 2] }, '/features/0/geometry/type', /must be "Polygon" or "MultiPolygon"/],
    ['no type', { coordinates: [square()] }, '/features/0/geometry/type', /required/],
    ['no parts', { type: 'MultiPolygon', coordinates: [] }, '/features/0/geometry/coordinates', /fewer than 1/],
    ['a Polygon\'s coordinates', { type: 'MultiPolygon', coordinates: square() }, '/features/0/geometry/coordinates/0/0', /fewer than 4 items/],
    ['open ring in part 2', { type: 'MultiPolygon', coordinates: [square(), square(3, 3), [[[0, 0], [1, 0], [1, 1], [0, 1]]]] }, '/features/0/geometry/coordinates/2/0', /not closed/],
    ['latitude out of range in part 1', { type: 'MultiPolygon', coordinates: [square(), [[[0, 0], [1, 0], [1, 95], [0, 0]]]] }, '/features/0/geometry/coordinates/1/0/2/1', /latitude/],
    ['null', null, '/features/0/geometry', /object/]
  ]
  for (const [name, geometry, pointer, message] of cases) {
    const body = expectError(t, await post(collection({ ...feature('x'), geometry })), 400, 'INVALID_GEOJSON')
    t.equal(body.details?.[0]?.pointer, pointer, `${name}: pointer`)
    t.match(body.details?.[0]?.message, message, `${name}: message`)
  }
})
