// Ids and CRS as GIS files carry them (issue 45, points 4 and 5): a numeric Feature id is the
// client's id as its decimal string (42 and "42" are one id); ?id_property= names the property
// that holds it and wins over the Feature's id; a feature without one is a 400 that says both
// ways to give it; a crs member naming CRS84 or EPSG:4326 is accepted, any other is a 400 that
// says which is expected. Odd ids go through POST as raw JSON text (-0, 1e400, 2^53 + 1, 1.5,
// "", objects): each a clear 400 or accepted, never a 500.
import t from 'tap'
import { build, collection, expectError, feature, session, square } from '../helper.js'

const ctx = await build(t)
const { app } = ctx
const editor = await session(ctx, 'editor', 'org-a')

const post = (payload: unknown, query = '', url = '/sources') =>
  app.inject({ method: 'POST', url: `${url}${query}`, headers: { ...editor.headers, 'content-type': 'application/json' }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) })
const read = async (id: string) => (await app.inject({ method: 'GET', url: `/sources/?id=${id}`, headers: editor.headers })).json()
const withProps = (id: unknown, properties: Record<string, unknown>, at = 0) =>
  ({ type: 'Feature', ...(id === undefined ? {} : { id }), properties: { start_at: '2024-01-01', end_at: '2024-12-31', ...properties }, geometry: { type: 'Polygon', coordinates: square(at, 0, 0.5) } })

t.test('a numeric id is the client\'s id as its decimal string; 42 and "42" are one id', async (t) => {
  const res = await post(collection(withProps(42, {}, 0)))
  t.equal(res.statusCode, 201, res.body)
  t.equal(res.json().sources[0].feature_id, '42')
  t.equal((await read(res.json().id)).properties.feature_id, '42', 'returned as the string stored')
  const again = expectError(t, await post(collection(withProps('42', {}, 1))), 409, 'SOURCE_CONFLICT')
  t.match(again.details?.[0], { pointer: '/features/0/id', feature_id: '42', existing_id: res.json().id }, '"42" is the id 42 already registered')
  const dup = expectError(t, await post(collection(withProps(7, {}, 2), withProps('7', {}, 3))), 422, 'DUPLICATE_FEATURE')
  t.equal(dup.details?.[0]?.pointer, '/features/1/id', '7 and "7" in one request clash')
  const big = await post(collection(withProps(9007199254740991, {}, 4), withProps(-12, {}, 5), withProps(100, {}, 6)))
  t.equal(big.statusCode, 201, big.body)
  t.same(big.json().sources.map((s: { feature_id: string }) => s.feature_id), ['9007199254740991', '-12', '100'])
})

t.test('?id_property= names the property holding the id; it wins over the Feature id', async (t) => {
  const res = await post(collection(withProps(undefined, { parcel_no: 'NL-1' }, 10), withProps(99, { parcel_no: 1001 }, 11)), '?id_property=parcel_no')
  t.equal(res.statusCode, 201, res.body)
  t.same(res.json().sources.map((s: { feature_id: string }) => s.feature_id), ['NL-1', '1001'])
  const ogc = await post(withProps(undefined, { 'parcel/no': 'NL-2' }, 12), `?id_property=${encodeURIComponent('parcel/no')}`, '/collections/sources/items')
  t.equal(ogc.statusCode, 201, ogc.body)
  t.equal(ogc.json().sources[0].feature_id, 'NL-2', 'on the OGC path, any property name')
  const missing = expectError(t, await post(collection(withProps('a', { parcel_no: 'NL-3' }, 13), withProps('b', {}, 14), withProps('c', { parcel_no: null }, 15)), '?id_property=parcel_no'), 400, 'INVALID_GEOJSON')
  t.match(missing.details, [
    { pointer: '/features/1/properties/parcel_no', feature_index: 1, message: /no property "parcel_no"/ },
    { pointer: '/features/2/properties/parcel_no', feature_index: 2 }
  ])
  const escaped = expectError(t, await post(collection(withProps('a', {}, 16)), `?id_property=${encodeURIComponent('a/b~c')}`), 400, 'INVALID_GEOJSON')
  t.equal(escaped.details?.[0]?.pointer, '/features/0/properties/a~1b~0c', 'the name escaped in the pointer')
  expectError(t, await post(collection(withProps('a', {}, 17)), '?id_property='), 400, 'VALIDATION_FAILED')

  // PUT takes it too.
  const id = res.json().sources[0].id as string
  const put = await app.inject({ method: 'PUT', url: `/sources/?id=${id}&id_property=parcel_no`, headers: { ...editor.headers, 'if-match': '*' }, payload: withProps(undefined, { parcel_no: 'NL-1b' }, 10) })
  t.equal(put.statusCode, 200, put.body)
  t.equal(put.json().properties.feature_id, 'NL-1b')
  const ogcPut = await app.inject({ method: 'PUT', url: `/collections/sources/items/${id}?id_property=parcel_no`, headers: { ...editor.headers, 'if-match': '*' }, payload: withProps(undefined, { parcel_no: 1234 }, 10) })
  t.equal(ogcPut.statusCode, 200, ogcPut.body)
  t.equal(ogcPut.json().properties.feature_id, '1234', 'the OGC PUT too, a numeric one')
})

t.test('400 for a feature without any id, saying both ways to give one', async (t) => {
  const body = expectError(t, await post(collection(withProps('ok', {}, 20), withProps(undefined, {}, 21))), 400, 'INVALID_GEOJSON')
  t.match(body.details, [{ pointer: '/features/1/id', feature_index: 1, message: /"id".*\?id_property=/ }])
  t.notOk('feature_id' in (body.details?.[0] ?? {}), 'no feature_id for a feature that has none')
  const put = expectError(t, await app.inject({ method: 'PUT', url: '/sources/?id=src_0000000000000000000000', headers: { ...editor.headers, 'if-match': '*' }, payload: withProps(undefined, {}) }), 400, 'INVALID_GEOJSON')
  t.match(put.details?.[0], { pointer: '/id', message: /id_property/ })
})

t.test('odd ids as raw JSON: accepted as their decimal string, or a clear 400, never a 500', async (t) => {
  const raw = (id: string, at: number) => `{"type":"FeatureCollection","features":[{"type":"Feature","id":${id},"properties":{"start_at":"2024-01-01","end_at":"2024-12-31"},"geometry":{"type":"Polygon","coordinates":[[[${at},5],[${at + 0.5},5],[${at + 0.5},5.5],[${at},5.5],[${at},5]]]}}]}`
  const accepted: Array<[string, string]> = [['-0', '0'], ['1e3', '1000'], ['4.0', '4'], ['"x\\u00e9"', 'xé']]
  let at = 30
  for (const [id, stored] of accepted) {
    const res = await post(raw(id, at++))
    t.equal(res.statusCode, 201, `${id}: ${res.body}`)
    t.equal(res.json().sources?.[0]?.feature_id, stored, `${id} is "${stored}"`)
  }
  const refused: Array<[string, RegExp]> = [
    ['1e400', /out of range/],
    ['-1e400', /out of range/],
    ['1.5', /not an integer/],
    ['9007199254740993', /2\^53/],
    ['123456789012345678901234567890', /2\^53/],
    ['""', /1 to 256 characters/],
    [JSON.stringify('x'.repeat(257)), /1 to 256 characters/],
    ['"a\\u0000b"', /U\+0000/],
    ['{"n":1}', /string or a number/],
    ['[1]', /string or a number/],
    ['true', /string or a number/],
    ['null', /string or a number/]
  ]
  for (const [id, message] of refused) {
    const body = expectError(t, await post(raw(id, at++)), 400, 'INVALID_GEOJSON')
    t.match(body.details?.[0], { pointer: '/features/0/id', message }, `${id.slice(0, 40)}: ${body.details?.[0]?.message ?? ''}`)
  }
  const deep = expectError(t, await post(raw('{"a":'.repeat(500) + '1' + '}'.repeat(500), at++)), 400, 'INVALID_GEOJSON')
  t.equal(deep.details?.[0]?.pointer, '/features/0/id', 'a deeply nested object id')
  const prop = expectError(t, await post(collection(withProps(undefined, { n: { nested: 1 } }, 60)), '?id_property=n'), 400, 'INVALID_GEOJSON')
  t.match(prop.details?.[0], { pointer: '/features/0/properties/n', message: /must be a string or an integer, not an object/ })
})

t.test('crs members: CRS84 and EPSG:4326 in their usual spellings accepted, any other a 400 naming the expected CRS', async (t) => {
  const named = (name: unknown) => ({ type: 'name', properties: { name } })
  const spellings = [
    'urn:ogc:def:crs:OGC:1.3:CRS84', 'urn:ogc:def:crs:EPSG::4326', 'http://www.opengis.net/def/crs/OGC/1.3/CRS84',
    'EPSG:4326', 'http://www.opengis.net/def/crs/EPSG/0/4326', 'urn:ogc:def:crs:OGC::CRS84', ' epsg:4326 '
  ]
  let at = 70
  for (const name of spellings) {
    const res = await post({ ...collection(withProps(`crs-${at}`, {}, at++)), crs: named(name) })
    t.equal(res.statusCode, 201, `${name}: ${res.body}`)
  }
  const onFeature = await post(collection({ ...withProps('crs-feature', {}, at++), crs: named('urn:ogc:def:crs:OGC:1.3:CRS84') }))
  t.equal(onFeature.statusCode, 201, 'a crs member on a Feature')
  const refused: Array<[unknown, RegExp]> = [
    [named('urn:ogc:def:crs:EPSG::28992'), /names the CRS "urn:ogc:def:crs:EPSG::28992".*CRS84.*EPSG:4326/],
    [named('EPSG:3857'), /EPSG:3857/],
    [{ type: 'link', properties: { href: 'http://example.com/crs/42', type: 'proj4' } }, /does not name a CRS/],
    [named(42), /does not name a CRS/],
    ['EPSG:4326', /does not name a CRS/],
    [null, /does not name a CRS/]
  ]
  for (const [crs, message] of refused) {
    const body = expectError(t, await post({ ...collection(withProps(`bad-${at}`, {}, at++)), crs }), 400, 'INVALID_GEOJSON')
    t.match(body.details?.[0], { pointer: '/crs', message }, JSON.stringify(crs))
    t.match(body.details?.[0]?.message, /longitude, latitude in WGS 84/)
  }
  const featureCrs = expectError(t, await post(collection(withProps('ok', {}, at++), { ...withProps('x', {}, at++), crs: named('EPSG:2154') })), 400, 'INVALID_GEOJSON')
  t.match(featureCrs.details?.[0], { pointer: '/features/1/crs', feature_index: 1 })
})

t.test('members GIS tools add (name, xy_coordinate_resolution, bbox, foreign members) are not refused', async (t) => {
  const res = await post({
    type: 'FeatureCollection',
    name: 'parcels',
    xy_coordinate_resolution: 1e-7,
    crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:OGC:1.3:CRS84' } },
    bbox: [90, 0, 90.5, 0.5],
    features: [{ ...feature('tool-1', { coordinates: square(90, 0, 0.5) }), bbox: [90, 0, 90.5, 0.5] }]
  })
  t.equal(res.statusCode, 201, res.body)
})
