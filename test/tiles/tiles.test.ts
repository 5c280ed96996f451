// OGC API – Tiles: the tileset documents and TileJSON, MVT attributes decoded with
// @mapbox/vector-tile, datetime and scope as for items, the 400/404/204 edges, the antimeridian
// and the poles, small sources merged into marks, and ETags that change with a write in the tile
// (on the next request, from the database's counters) and not with one elsewhere.
import t from 'tap'
import { sql } from 'kysely'
import { Value } from '@sinclair/typebox/value'
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader as Pbf } from 'pbf'
import { TileJsonSchema, TileMatrixSetSchema, TileMatrixSetsSchema, TileSetSchema, TileSetsSchema } from '../../src/tiles/tiles.schema.js'
import { build, collection, expectError, feature, session } from '../helper.js'
import { type Decoded, decode, tileOf, tileUrl } from './mvt.js'

const ctx = await build(t)
const { app, db } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'hq')

const box = (w: number, s: number, size = 0.5) => [[[w, s], [w + size, s], [w + size, s + size], [w, s + size], [w, s]]]
async function post (headers: Record<string, string>, ...features: unknown[]): Promise<string[]> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(...features) })
  if (res.statusCode !== 201) throw new Error(`seeding: ${res.statusCode} ${res.body}`)
  return (res.json() as { sources: Array<{ id: string }> }).sources.map((f) => f.id)
}

await post(editorA.headers,
  feature('a-jan', { coordinates: box(10, 50), start: '2024-01-01T00:00:00Z', end: '2024-02-01T00:00:00Z' }),
  feature('a-jun', { coordinates: box(10.2, 50.2), start: '2024-06-01T00:00:00Z', end: '2024-07-01T00:00:00Z' }),
  feature('east-edge', { coordinates: [[[179.5, 0], [180, 0], [180, 1], [179.5, 1], [179.5, 0]]] }),
  feature('west-edge', { coordinates: [[[-180, 0], [-179.5, 0], [-179.5, 1], [-180, 1], [-180, 0]]] }),
  feature('polar', { coordinates: [[[20, 80], [30, 80], [30, 90], [20, 90], [20, 80]]] }))
await post(editorB.headers, feature('b-one', { coordinates: box(10.1, 50.1) }))

const get = (url: string, headers: Record<string, string> = editorA.headers) => app.inject({ method: 'GET', url, headers })
const names = (features: Decoded[]) => features.map((f) => f.properties.feature_id).sort()

t.test('tilesets list, tileset metadata, TileJSON and conformance', async (t) => {
  const headers = { ...editorA.headers, host: 'registry.example:8080' }
  const list = await get('/collections/sources/tiles', headers)
  t.equal(list.statusCode, 200)
  t.ok(Value.Check(TileSetsSchema, list.json()), 'tilesets list')
  const set = await get('/collections/sources/tiles/WebMercatorQuad', headers)
  t.equal(set.statusCode, 200)
  t.ok(Value.Check(TileSetSchema, set.json()), 'tileset')
  const item = (set.json() as { links: Array<{ rel: string, href: string, templated?: boolean }> }).links.find((l) => l.rel === 'item')
  t.equal(item?.href, 'http://registry.example:8080/collections/sources/tiles/WebMercatorQuad/{tileMatrix}/{tileRow}/{tileCol}')
  t.equal(item?.templated, true)
  const tj = await get('/collections/sources/tiles/WebMercatorQuad/tilejson.json', headers)
  t.equal(tj.statusCode, 200)
  t.ok(Value.Check(TileJsonSchema, tj.json()), 'TileJSON 3.0')
  t.same((tj.json() as { tiles: string[] }).tiles, ['http://registry.example:8080/collections/sources/tiles/WebMercatorQuad/{z}/{y}/{x}'])
  t.same(Object.keys((tj.json() as { vector_layers: Array<{ fields: object }> }).vector_layers[0]?.fields ?? {}).sort(),
    ['area_m2', 'conflict', 'count', 'end_at', 'feature_id', 'id', 'start_at'])
  const conformance = (await get('/conformance')).json() as { conformsTo: string[] }
  for (const c of ['core', 'tileset', 'tilesets-list', 'geodata-tilesets', 'tilematrixset', 'mvt']) t.ok(conformance.conformsTo.includes(`http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/${c}`), c)
  const coll = (await get('/collections/sources', headers)).json() as { links: Array<{ rel: string, href: string }> }
  t.equal(coll.links.find((l) => l.rel === 'http://www.opengis.net/def/rel/ogc/1.0/tilesets-vector')?.href, 'http://registry.example:8080/collections/sources/tiles')
  expectError(t, await app.inject({ method: 'GET', url: '/collections/sources/tiles/WebMercatorQuad/tilejson.json' }), 401, 'UNAUTHORIZED')
})

t.test('the tiling scheme: /tileMatrixSets and WebMercatorQuad as 2D-TMS 2.0, linked from the tileset', async (t) => {
  const headers = { host: 'registry.example:8080' }
  const list = await app.inject({ method: 'GET', url: '/tileMatrixSets', headers })
  t.equal(list.statusCode, 200, 'public, as /conformance')
  t.ok(Value.Check(TileMatrixSetsSchema, list.json()))
  const self = (list.json() as { tileMatrixSets: Array<{ id: string, links: Array<{ href: string }> }> }).tileMatrixSets
  t.same(self.map((s) => s.id), ['WebMercatorQuad'])
  t.equal(self[0]?.links[0]?.href, 'http://registry.example:8080/tileMatrixSets/WebMercatorQuad')
  const tms = await app.inject({ method: 'GET', url: '/tileMatrixSets/WebMercatorQuad', headers })
  t.equal(tms.statusCode, 200)
  t.ok(Value.Check(TileMatrixSetSchema, tms.json()))
  const doc = tms.json() as { uri: string, crs: string, tileMatrices: Array<{ id: string, scaleDenominator: number, cellSize: number, pointOfOrigin: number[], matrixWidth: number, matrixHeight: number }> }
  t.equal(doc.uri, 'http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad')
  t.equal(doc.crs, 'http://www.opengis.net/def/crs/EPSG/0/3857')
  t.same(doc.tileMatrices.map((m) => m.id), Array.from({ length: 23 }, (_, z) => String(z)), 'zoom 0 to 22')
  // OGC 2D-TMS 2.0 Annex D's WebMercatorQuad: level 0 and 22.
  t.ok(Math.abs((doc.tileMatrices[0]?.scaleDenominator ?? 0) - 559082264.0287178) < 1e-6, 'scale denominator at 0')
  t.ok(Math.abs((doc.tileMatrices[0]?.cellSize ?? 0) - 156543.0339280410) < 1e-9, 'cell size at 0')
  t.ok(Math.abs((doc.tileMatrices[22]?.scaleDenominator ?? 0) - 133.2955989906115) < 1e-9, 'scale denominator at 22')
  t.same(doc.tileMatrices[3]?.pointOfOrigin.map((v) => Math.round(v * 1e4) / 1e4), [-20037508.3428, 20037508.3428])
  t.equal(doc.tileMatrices[3]?.matrixWidth, 8)
  const set = (await get('/collections/sources/tiles/WebMercatorQuad', { ...editorA.headers, ...headers })).json() as { links: Array<{ rel: string, href: string }>, tileMatrixSetURI: string }
  t.equal(set.links.find((l) => l.rel === 'http://www.opengis.net/def/rel/ogc/1.0/tiling-scheme')?.href, 'http://registry.example:8080/tileMatrixSets/WebMercatorQuad', 'the tileset links the definition served here')
  t.equal(set.tileMatrixSetURI, doc.uri)
})

t.test('the tileset\'s boundingBox and TileJSON\'s bounds: where the caller\'s sources are', async (t) => {
  const close = (a: number[] | undefined, b: number[]) => a !== undefined && a.length === b.length && a.every((v, i) => Math.abs(v - (b[i] as number)) < 1e-9)
  // org-b has one source, 10.1–10.6 × 50.1–50.6.
  const set = (await get('/collections/sources/tiles/WebMercatorQuad', editorB.headers)).json() as { boundingBox?: { lowerLeft: number[], upperRight: number[], crs: string } }
  t.ok(close(set.boundingBox?.lowerLeft, [10.1, 50.1]) && close(set.boundingBox?.upperRight, [10.6, 50.6]), JSON.stringify(set.boundingBox))
  t.equal(set.boundingBox?.crs, 'http://www.opengis.net/def/crs/OGC/1.3/CRS84')
  const tjB = (await get('/collections/sources/tiles/WebMercatorQuad/tilejson.json', editorB.headers)).json() as { bounds: number[] }
  t.ok(close(tjB.bounds, [10.1, 50.1, 10.6, 50.6]), `org-b: ${JSON.stringify(tjB.bounds)}`)
  // org-a reaches both edges of the world and the pole: TileJSON keeps to Web Mercator's latitudes.
  const tjA = (await get('/collections/sources/tiles/WebMercatorQuad/tilejson.json')).json() as { bounds: number[] }
  t.ok(close(tjA.bounds, [-180, 0, 180, 85.0511287798066]), `org-a: ${JSON.stringify(tjA.bounds)}`)
  const none = await session(ctx, 'viewer', 'org-empty')
  const tjNone = (await get('/collections/sources/tiles/WebMercatorQuad/tilejson.json', none.headers)).json() as { bounds: number[] }
  t.same(tjNone.bounds, [-180, -85.0511287798066, 180, 85.0511287798066], 'no sources: the world')
  t.notOk('boundingBox' in ((await get('/collections/sources/tiles/WebMercatorQuad', none.headers)).json() as object), 'no sources: no boundingBox')
})

t.test('the z/x/y alias: the same tile with the column first; an empty tile is an MVT layer without features', async (t) => {
  const [z, x, y] = tileOf(10.25, 50.25, 10)
  const ogc = await get(tileUrl([z, x, y]))
  const alias = await get(`/collections/sources/tiles/WebMercatorQuad/xyz/${z}/${x}/${y}.pbf`)
  t.equal(alias.statusCode, 200)
  t.equal(alias.headers['content-type'], 'application/vnd.mapbox-vector-tile')
  t.same(alias.rawPayload, ogc.rawPayload, 'the bytes of the OGC path')
  t.equal(alias.headers.etag, ogc.headers.etag, 'and its ETag')
  t.equal((await get(`/collections/sources/tiles/WebMercatorQuad/xyz/${z}/${x}/${y}`, { ...editorA.headers, 'if-none-match': String(ogc.headers.etag) })).statusCode, 304)
  const emptyOgc = await get('/collections/sources/tiles/WebMercatorQuad/10/0/0')
  t.equal(emptyOgc.statusCode, 204, 'the OGC path keeps 204')
  const empty = await get('/collections/sources/tiles/WebMercatorQuad/xyz/10/0/0.pbf')
  t.equal(empty.statusCode, 200)
  // Read field by field: @mapbox/vector-tile leaves out a layer without features.
  interface Layer { name: string, version: number, extent: number, features: number }
  const layers = new Pbf(empty.rawPayload).readFields((tag, acc: Layer[], pbf) => {
    if (tag === 3) {
      acc.push(pbf.readMessage((field, l: Layer, p) => {
        if (field === 1) l.name = p.readString()
        else if (field === 15) l.version = p.readVarint()
        else if (field === 5) l.extent = p.readVarint()
        else if (field === 2) { l.features++; p.skip(2) }
      }, { name: '', version: 0, extent: 0, features: 0 }))
    }
  }, [])
  t.same(layers, [{ name: 'sources', version: 2, extent: 4096, features: 0 }], 'one layer, "sources", MVT 2, extent 4096, no feature')
  expectError(t, await get('/collections/sources/tiles/WebMercatorQuad/xyz/3/8/0.pbf'), 404, 'NOT_FOUND')
  const bad = expectError(t, await get('/collections/sources/tiles/WebMercatorQuad/xyz/3/a/0.pbf'), 400, 'VALIDATION_FAILED')
  t.equal(bad.details?.[0]?.pointer, '/x')
  expectError(t, await app.inject({ method: 'GET', url: '/collections/sources/tiles/WebMercatorQuad/xyz/3/0/0.pbf' }), 401, 'UNAUTHORIZED')
})

t.test('a tile: one layer "sources", extent 4096, the attributes', async (t) => {
  const tile = tileOf(10.25, 50.25, 10)
  const res = await get(tileUrl(tile))
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/vnd.mapbox-vector-tile')
  const vt = new VectorTile(new Pbf(res.rawPayload))
  t.same(Object.keys(vt.layers), ['sources'])
  t.equal(vt.layers.sources?.extent, 4096)
  const features = decode(res.rawPayload, tile)
  t.same(names(features), ['a-jan', 'a-jun'], 'org-a sees its own')
  const jan = features.find((f) => f.properties.feature_id === 'a-jan')
  t.match(jan?.properties, { id: /^src_/, start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z', conflict: true, count: 1 }, 'it overlaps b-one')
  t.ok(Math.abs(Number(jan?.properties.area_m2) - 1.97e9) < 0.1e9, 'area_m2')
  t.equal(jan?.geometry.type, 'Polygon')
  const z7 = tileOf(10.25, 50.25, 7)
  const whole = decode((await get(tileUrl(z7))).rawPayload, z7).find((f) => f.properties.feature_id === 'a-jan')
  const lons = ((whole?.geometry.coordinates as number[][][])[0] as number[][]).map((p) => p[0] as number)
  t.ok(Math.abs(Math.min(...lons) - 10) < 0.01 && Math.abs(Math.max(...lons) - 10.5) < 0.01, 'the polygon where it is')
  t.match(res.headers, { etag: /^"[\w-]+"$/, 'cache-control': 'private, max-age=10', vary: /Authorization/ })
})

t.test('scope, the admin\'s organisation and datetime filter like items', async (t) => {
  const tile = tileOf(10.25, 50.25, 10)
  t.same(names(decode((await get(tileUrl(tile), editorB.headers)).rawPayload, tile)), ['b-one'], 'org-b sees its own')
  t.same(names(decode((await get(tileUrl(tile), admin.headers)).rawPayload, tile)), ['a-jan', 'a-jun', 'b-one'], 'admin: all')
  t.same(names(decode((await get(tileUrl(tile, '?organisation=org-b'), admin.headers)).rawPayload, tile)), ['b-one'])
  expectError(t, await get(tileUrl(tile, '?organisation=org-b')), 400, 'VALIDATION_FAILED')
  t.same(names(decode((await get(tileUrl(tile, '?datetime=2024-06-15T00:00:00Z'))).rawPayload, tile)), ['a-jun'])
  t.same(names(decode((await get(tileUrl(tile, '?datetime=../2024-03-01T00:00:00Z'))).rawPayload, tile)), ['a-jan'])
  t.equal((await get(tileUrl(tile, '?datetime=2030-01-01T00:00:00Z'))).statusCode, 204, 'nothing then')
  expectError(t, await get(tileUrl(tile, '?datetime=yesterday')), 400, 'VALIDATION_FAILED')
  expectError(t, await get(tileUrl(tile, '?bbox=1,2,3,4')), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: tileUrl(tile) }), 401, 'UNAUTHORIZED')
  const a = (await get(tileUrl(tile))).headers.etag
  const b = (await get(tileUrl(tile), editorB.headers)).headers.etag
  const all = (await get(tileUrl(tile), admin.headers)).headers.etag
  t.not(a, b, 'ETags differ across organisations')
  t.not(a, all)
})

t.test('400 for a path that is no whole number, 404 outside the matrix, 204 for an empty tile', async (t) => {
  for (const path of ['1.5/0/0', '-1/0/0', '1/a/0', '1/0/0x1', '1/0/%20', '1/0/0.json', '1/0.pbf/0']) {
    expectError(t, await get(`/collections/sources/tiles/WebMercatorQuad/${path}`), 400, 'VALIDATION_FAILED')
  }
  for (const path of ['23/0/0', '1/2/0', '1/0/2', '0/1/0', '99999999999/0/0']) {
    expectError(t, await get(`/collections/sources/tiles/WebMercatorQuad/${path}`), 404, 'NOT_FOUND')
  }
  expectError(t, await get('/collections/sources/tiles/WorldCRS84Quad/0/0/0'), 404, 'NOT_FOUND')
  const empty = await get(tileUrl(tileOf(-60, -30, 8)))
  t.equal(empty.statusCode, 204)
  t.equal(empty.body, '')
  t.ok(empty.headers.etag, 'an empty tile has an ETag too')
  const z22 = await get(tileUrl(tileOf(10.25, 50.25, 22)))
  t.equal(z22.statusCode, 200, 'zoom 22 inside a source')
  t.same(names(decode(z22.rawPayload, tileOf(10.25, 50.25, 22))), ['a-jan', 'a-jun'])
  t.equal((await get(tileUrl([0, 0, 0]))).statusCode, 200, 'the world')
  t.same((await get(tileUrl([0, 0, 0], '.pbf'))).rawPayload, (await get(tileUrl([0, 0, 0]))).rawPayload, 'a .pbf suffix (GDAL)')
})

t.test('the antimeridian and the poles', async (t) => {
  for (const z of [0, 3, 8, 14]) {
    const east = tileOf(179.75, 0.5, z)
    const west = tileOf(-179.75, 0.5, z)
    const e = decode((await get(tileUrl(east))).rawPayload, east)
    const w = decode((await get(tileUrl(west))).rawPayload, west)
    t.ok(names(e).includes('east-edge'), `z${z}: east edge in the easternmost tile`)
    t.equal(e.find((f) => f.properties.feature_id === 'east-edge')?.properties.conflict, false, 'no conflict')
    t.ok(names(w).includes('west-edge'), `z${z}: west edge in the westernmost tile`)
    if (z > 0) {
      t.notOk(names(e).includes('west-edge'), `z${z}: the west edge is not drawn in the east`)
      const lons = ((e.find((f) => f.properties.feature_id === 'east-edge')?.geometry.coordinates as number[][][])[0] as number[][]).map((p) => p[0] as number)
      t.ok(Math.min(...lons) > 179 && Math.max(...lons) <= 180.01, `z${z}: drawn at 179.5–180 (${Math.min(...lons)}–${Math.max(...lons)})`)
    }
  }
  for (const z of [0, 2, 6]) {
    const top = tileOf(25, 85.04, z)
    const res = await get(tileUrl(top))
    t.equal(res.statusCode, 200, `z${z}: a polygon to the pole is drawn in the top row`)
    const polar = decode(res.rawPayload, top).find((f) => f.properties.feature_id === 'polar')
    const lats = ((polar?.geometry.coordinates as number[][][])[0] as number[][]).map((p) => p[1] as number)
    t.ok(Math.max(...lats) <= 85.06 && Math.max(...lats) > 85, `z${z}: clipped at 85.0511° (${Math.max(...lats)})`)
  }
})

t.test('small sources at low zoom become marks that count them', async (t) => {
  const small = Array.from({ length: 300 }, (_, i) => feature(`tiny-${i}`, { coordinates: box(-40 + (i % 20) * 0.01, -20 + Math.floor(i / 20) * 0.01, 0.005) }))
  await post(editorA.headers, ...small)
  const z4 = tileOf(-39.9, -19.9, 4)
  const marks = decode((await get(tileUrl(z4))).rawPayload, z4)
  t.ok(marks.length >= 1 && marks.length < 20, `${marks.length} marks`)
  t.equal(marks.reduce((n, f) => n + Number(f.properties.count), 0), 300, 'every small source counted')
  t.ok(marks.some((f) => f.properties.id === undefined), 'a mark for many has no id')
  const z16 = tileOf(-40 + 0.0025, -20 + 0.0025, 16)
  const one = decode((await get(tileUrl(z16))).rawPayload, z16)
  t.same(names(one), ['tiny-0'], 'each source itself when zoomed in')
})

t.test('ETag: 304 on a match; a write in the tile changes it, one elsewhere does not', async (t) => {
  const here = tileOf(10.25, 50.25, 12)
  const there = tileOf(-100, 40, 12)
  await post(editorA.headers, feature('far', { coordinates: box(-100, 40, 0.01) }))
  const first = await get(tileUrl(here))
  const farFirst = await get(tileUrl(there))
  const etag = first.headers.etag as string
  const farTag = farFirst.headers.etag as string
  const again = await get(tileUrl(here), { ...editorA.headers, 'if-none-match': etag })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  t.equal(again.headers.etag, etag)
  t.equal((await get(tileUrl(here), { ...editorA.headers, 'if-none-match': `"x", W/${etag}` })).statusCode, 304, 'weak comparison, a list')
  t.equal((await get(tileUrl(here), { ...editorA.headers, 'if-none-match': '"other"' })).statusCode, 200)

  const [id] = await post(editorB.headers, feature('b-new', { coordinates: box(10.26, 50.26, 0.01) }))
  const after = await get(tileUrl(here), { ...editorA.headers, 'if-none-match': etag })
  t.equal(after.statusCode, 200, 'another organisation\'s write in the tile: new ETag (the counters are shared)')
  t.not(after.headers.etag, etag)
  t.equal((await get(tileUrl(there), { ...editorA.headers, 'if-none-match': farTag })).statusCode, 304, 'the tile elsewhere keeps its ETag')

  const beforeDelete = (await get(tileUrl(here), editorB.headers)).headers.etag
  const deleted = await app.inject({ method: 'DELETE', url: `/sources/?id=${id as string}`, headers: editorB.headers })
  t.equal(deleted.statusCode, 200, deleted.body)
  t.not((await get(tileUrl(here), editorB.headers)).headers.etag, beforeDelete, 'a delete changes it')

  const beforeSql = (await get(tileUrl(here))).headers.etag
  await sql`UPDATE sources SET period = tstzrange('2024-01-01', '2024-03-01') WHERE feature_id = 'a-jan'`.execute(db)
  t.not((await get(tileUrl(here))).headers.etag, beforeSql, 'an UPDATE in plain SQL changes it')
  t.equal((await get(tileUrl(there), { ...editorA.headers, 'if-none-match': farTag })).statusCode, 304, 'and not elsewhere')
})

t.test('PUT, PATCH and DELETE change the ETags of the tiles a source leaves and enters, and no other', async (t) => {
  const here = tileOf(10.25, 50.25, 12)
  const there = tileOf(-100, 40, 12)
  const elsewhere = tileOf(60, -30, 12)
  const tag = async (tile: [number, number, number]) => (await get(tileUrl(tile))).headers.etag as string
  const shown = async (tile: [number, number, number]) => names(decode((await get(tileUrl(tile))).rawPayload, tile))
  const [id] = await post(editorA.headers, feature('mover', { coordinates: box(-100.03, 40.03, 0.02), start: '2024-01-01T00:00:00Z', end: '2024-12-31T00:00:00Z' }))
  const item = `/sources/?id=${id as string}`
  t.ok((await shown(there)).includes('mover'))
  const before = [await tag(here), await tag(there), await tag(elsewhere)]
  const moved = await app.inject({
    method: 'PATCH', url: item, headers: { ...editorA.headers, 'content-type': 'application/merge-patch+json', 'if-match': 'W/"1"' },
    payload: JSON.stringify({ geometry: { coordinates: box(10.27, 50.27, 0.02) } })
  })
  t.equal(moved.statusCode, 200, moved.body)
  t.not(await tag(here), before[0], 'PATCH: the tile it enters')
  t.not(await tag(there), before[1], 'PATCH: the tile it leaves')
  t.equal(await tag(elsewhere), before[2], 'PATCH: not elsewhere')
  t.ok((await shown(here)).includes('mover'))
  t.notOk((await shown(there)).includes('mover'))

  const period = [await tag(here), await tag(elsewhere)]
  const replaced = await app.inject({
    method: 'PUT', url: item, headers: { ...editorA.headers, 'if-match': 'W/"2"' },
    payload: feature('mover', { coordinates: box(10.27, 50.27, 0.02), start: '2024-02-01T00:00:00Z', end: '2024-12-31T00:00:00Z' })
  })
  t.equal(replaced.statusCode, 200, replaced.body)
  t.not(await tag(here), period[0], 'PUT of the period alone: the tile changes')
  t.equal(await tag(elsewhere), period[1], 'PUT: not elsewhere')
  const filtered = decode((await get(tileUrl(here, '?datetime=2024-01-15T00:00:00Z'))).rawPayload, here)
  t.notOk(names(filtered).includes('mover'), 'the new period, as a datetime filter sees it')

  const beforeDelete = [await tag(here), await tag(elsewhere)]
  t.equal((await app.inject({ method: 'DELETE', url: item, headers: { ...editorA.headers, 'if-match': 'W/"3"' } })).statusCode, 200)
  t.not(await tag(here), beforeDelete[0], 'DELETE: the tile changes')
  t.equal(await tag(elsewhere), beforeDelete[1], 'DELETE: not elsewhere')
  t.notOk((await shown(here)).includes('mover'), 'a deleted source is not drawn')
})
