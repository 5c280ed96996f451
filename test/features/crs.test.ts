// OGC API – Features Part 2: the CRSs the collection lists, reads in another CRS (items, one
// item, as_of, versions) with the Content-Crs header and each CRS's axis order, bbox-crs, and
// writes with Content-Crs on both paths: transformed once, a position outside the CRS's area of
// use refused (422), projected coordinates without Content-Crs refused (400), a round trip through
// EPSG:28992 within 1 mm, and the area still the ellipsoid's.
import t from 'tap'
import { sql } from 'kysely'
import { build, expectError, feature, session } from '../helper.js'

const ctx = await build(t, { LOG_LEVEL: 'error' })
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-crs')

const EPSG = (code: number) => `http://www.opengis.net/def/crs/EPSG/0/${code}`
const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84'
type Ring = number[][]
interface Feature { id: string, geometry: { coordinates: Ring[] } | null, properties: { feature_id: string, area_m2: number } }

// A 100 m × 100 m square in EPSG:28992 (Amersfoort / RD New), in Utrecht, with decimals below a millimetre.
const rd: Ring = [[135000.1234, 456000.5678], [135100.1234, 456000.5678], [135100.1234, 456100.5678], [135000.1234, 456100.5678], [135000.1234, 456000.5678]]

const send = (method: 'POST' | 'PUT' | 'PATCH', url: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method, url, payload: payload as object, headers: { ...editor.headers, ...headers } })
const get = (url: string) => app.inject({ method: 'GET', url, headers: editor.headers })

async function create (id: string, coordinates: Ring[], crs?: string): Promise<string> {
  const res = await send('POST', '/collections/sources/items', feature(id, { coordinates }), crs === undefined ? {} : { 'content-crs': `<${crs}>` })
  if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`)
  return (res.json() as { id: string }).id
}

const maxDistance = (a: Ring, b: Ring): number => Math.max(...a.map((p, i) => Math.hypot((p[0] as number) - (b[i]?.[0] as number), (p[1] as number) - (b[i]?.[1] as number))))

t.test('the collection lists its CRSs and storageCrs; conformance declares Part 2', async (t) => {
  const collection = (await get('/collections/sources')).json() as { crs: string[], storageCrs: string }
  t.same(collection.crs, [CRS84, ...[4326, 3857, 3035, 28992, 25832, 25833, 27700, 2154].map(EPSG)])
  t.equal(collection.storageCrs, CRS84)
  const conformance = (await app.inject({ method: 'GET', url: '/conformance' })).json() as { conformsTo: string[] }
  t.ok(conformance.conformsTo.includes('http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs'))
  // Every CRS listed is one PostGIS can transform to.
  for (const code of [3857, 3035, 28992, 25832, 25833, 27700, 2154]) {
    const { rows } = await sql<{ x: number }>`SELECT ST_X(ST_Transform(ST_SetSRID(ST_MakePoint(5.1, 52.1), 4326), ${code}::int)) AS x`.execute(db)
    t.ok(Number.isFinite(rows[0]?.x), `EPSG:${code} is in spatial_ref_sys, with PROJ's data`)
  }
})

t.test('EPSG:28992 in and out: Content-Crs, axis order, a round trip within 1 mm, the ellipsoid\'s area', async (t) => {
  const id = await create('rd-square', [rd], EPSG(28992))
  const stored = (await get(`/collections/sources/items/${id}`))
  t.equal(stored.headers['content-crs'], `<${CRS84}>`, 'the default is CRS84, and says so')
  const lonLat = (stored.json() as Feature).geometry?.coordinates[0] as Ring
  t.ok(Math.abs((lonLat[0]?.[0] as number) - 5.12) < 0.05 && Math.abs((lonLat[0]?.[1] as number) - 52.09) < 0.05, `stored in CRS84, longitude first: ${JSON.stringify(lonLat[0])}`)

  const back = await get(`/collections/sources/items/${id}?crs=${encodeURIComponent(EPSG(28992))}`)
  t.equal(back.statusCode, 200)
  t.equal(back.headers['content-crs'], `<${EPSG(28992)}>`)
  const d = maxDistance((back.json() as Feature).geometry?.coordinates[0] as Ring, rd)
  t.ok(d < 0.001, `28992 → store → 28992 within 1 mm (${(d * 1000).toFixed(6)} mm)`)

  const area = (back.json() as Feature).properties.area_m2
  const { rows } = await sql<{ a: number }>`SELECT lonlat_area_m2(geom) AS a FROM sources WHERE id = ${id}`.execute(db)
  t.equal(area, rows[0]?.a, 'the area is the one computed on the ellipsoid from the stored longitudes and latitudes')
  t.ok(Math.abs(area - 10000) < 100, `about 10,000 m² (${area})`)

  const lat = ((await get(`/collections/sources/items/${id}?crs=EPSG:4326`)).json() as Feature).geometry?.coordinates[0]?.[0] as number[]
  t.same(lat, [lonLat[0]?.[1], lonLat[0]?.[0]], 'EPSG:4326 is latitude, longitude')
  const laea = (await get(`/collections/sources/items/${id}?crs=${encodeURIComponent(EPSG(3035))}`))
  const [northing, easting] = (laea.json() as Feature).geometry?.coordinates[0]?.[0] as [number, number]
  t.ok(Math.abs(northing - 3.23e6) < 2e4 && Math.abs(easting - 3.99e6) < 2e4, `EPSG:3035 is northing, easting: ${northing}, ${easting}`)
  const web = ((await get(`/collections/sources/items/${id}?crs=${encodeURIComponent(EPSG(3857))}`)).json() as Feature).geometry?.coordinates[0]?.[0] as number[]
  t.ok(Math.abs((web[0] as number) - 570000) < 2e4, `EPSG:3857 is x, y: ${JSON.stringify(web)}`)

  const items = await get(`/collections/sources/items?crs=${encodeURIComponent(EPSG(28992))}&feature_id=rd-square`)
  t.equal(items.statusCode, 200, items.body)
  t.equal(items.headers['content-crs'], `<${EPSG(28992)}>`)
  t.ok(maxDistance((items.json() as { features: Feature[] }).features[0]?.geometry?.coordinates[0] as Ring, rd) < 0.001, 'items too')

  const at = new Date(Date.now() + 1000).toISOString()
  const asOf = await get(`/collections/sources/items/${id}?crs=${encodeURIComponent(EPSG(28992))}&as_of=${at}`)
  t.equal(asOf.headers['content-crs'], `<${EPSG(28992)}>`)
  t.ok(maxDistance((asOf.json() as Feature).geometry?.coordinates[0] as Ring, rd) < 0.001, 'as_of too')
  const versions = await get(`/collections/sources/items/${id}/versions?crs=${encodeURIComponent(EPSG(28992))}`)
  t.equal(versions.headers['content-crs'], `<${EPSG(28992)}>`)
  t.ok(maxDistance((versions.json() as { versions: Array<{ feature: Feature }> }).versions[0]?.feature.geometry?.coordinates[0] as Ring, rd) < 0.001, 'versions too')

  // The seed's paths too: GET /sources/?id= (with as_of) and /sources/versions.
  const seedPath = await get(`/sources/?id=${id}&crs=${encodeURIComponent(EPSG(28992))}`)
  t.equal(seedPath.headers['content-crs'], `<${EPSG(28992)}>`)
  t.ok(maxDistance((seedPath.json() as Feature).geometry?.coordinates[0] as Ring, rd) < 0.001, 'GET /sources/?id= too')
  t.ok(maxDistance((await get(`/sources/?id=${id}&crs=EPSG:28992&as_of=${at}`)).json().geometry.coordinates[0] as Ring, rd) < 0.001, 'and its as_of')
  const seedVersions = await get(`/sources/versions?id=${id}&crs=EPSG:28992`)
  t.equal(seedVersions.headers['content-crs'], `<${EPSG(28992)}>`)
  t.ok(maxDistance((seedVersions.json() as { versions: Array<{ feature: Feature }> }).versions[0]?.feature.geometry?.coordinates[0] as Ring, rd) < 0.001, '/sources/versions too')
  t.equal((await get(`/sources/?id=${id}`)).headers['content-crs'], undefined, 'the seed\'s GET without crs is as it was')
  t.equal((await get(`/sources/?id=${id}&crs=EPSG:9999`)).statusCode, 400, 'an unknown crs: 400')
})

t.test('bbox-crs: a box in a projected CRS, or in EPSG:4326 (latitude first)', async (t) => {
  const ids = async (query: string) => ((await get(`/collections/sources/items?feature_id=rd-square&${query}`)).json() as { features: Feature[] }).features.length
  t.equal(await ids(`bbox=134900,455900,135200,456200&bbox-crs=${encodeURIComponent(EPSG(28992))}`), 1, 'around it')
  t.equal(await ids(`bbox=135050,456050,135060,456060&bbox-crs=${encodeURIComponent(EPSG(28992))}`), 1, 'inside it')
  t.equal(await ids(`bbox=140000,456000,141000,457000&bbox-crs=${encodeURIComponent(EPSG(28992))}`), 0, 'beside it')
  t.equal(await ids('bbox=52,5,52.2,5.2&bbox-crs=EPSG:4326'), 1, 'EPSG:4326: minLat,minLon,maxLat,maxLon')
  t.equal(await ids('bbox=5,52,5.2,52.2&bbox-crs=EPSG:4326'), 0, 'not longitude first')
  expectError(t, await get('/collections/sources/items?bbox-crs=EPSG:28992'), 400, 'VALIDATION_FAILED')
})

t.test('writes in other CRSs on both paths: PUT in EPSG:3035 (northing first), PATCH in EPSG:27700', async (t) => {
  const id = await create('moved', [rd], EPSG(28992))
  // The same square as EPSG:3035 gives it, northing first.
  const laea = ((await get(`/collections/sources/items/${id}?crs=${encodeURIComponent(EPSG(3035))}`)).json() as Feature).geometry?.coordinates as Ring[]
  const put = await send('PUT', `/sources?id=${id}`, feature('moved', { coordinates: laea }), { 'if-match': 'W/"1"', 'content-crs': EPSG(3035) })
  t.equal(put.statusCode, 200, put.body)
  const rdAgain = ((await get(`/collections/sources/items/${id}?crs=${encodeURIComponent(EPSG(28992))}`)).json() as Feature).geometry?.coordinates[0] as Ring
  t.ok(maxDistance(rdAgain, rd) < 0.001, `3035 (northing first) in, 28992 out: the same square (${maxDistance(rdAgain, rd)} m)`)

  const british: Ring = [[530000, 180000], [530100, 180000], [530100, 180100], [530000, 180100], [530000, 180000]]
  const patched = await send('PATCH', `/collections/sources/items/${id}`, { geometry: { coordinates: [british] } },
    { 'if-match': 'W/"2"', 'content-type': 'application/merge-patch+json', 'content-crs': `<${EPSG(27700)}>` })
  t.equal(patched.statusCode, 200, patched.body)
  const london = (patched.json() as Feature).geometry?.coordinates[0]?.[0] as number[]
  t.ok(Math.abs((london[0] as number) + 0.13) < 0.05 && Math.abs((london[1] as number) - 51.5) < 0.05, `London, in CRS84: ${JSON.stringify(london)}`)
  const back = ((await get(`/collections/sources/items/${id}?crs=${encodeURIComponent(EPSG(27700))}`)).json() as Feature).geometry?.coordinates[0] as Ring
  t.ok(maxDistance(back, british) < 0.002, `and back in EPSG:27700 within 2 mm (PROJ's Helmert inverse is approximate) (${maxDistance(back, british)} m)`)

  const posted = await send('POST', '/sources', { type: 'FeatureCollection', features: [feature('lat-first', { coordinates: [[[52, 5], [52, 5.001], [52.001, 5.001], [52.001, 5], [52, 5]]] })] }, { 'content-crs': EPSG(4326) })
  t.equal(posted.statusCode, 201, posted.body)
  const first = ((await get(`/collections/sources/items/${(posted.json() as { sources: Array<{ id: string }> }).sources[0]?.id ?? ''}`)).json() as Feature).geometry?.coordinates[0]?.[0]
  t.same(first, [5, 52], 'EPSG:4326 in: latitude, longitude, stored longitude first')
})

t.test('refusals: outside the area of use (422), projected without Content-Crs (400), unknown CRSs (400)', async (t) => {
  // x = 400 km: east of the Netherlands, outside EPSG:28992's area of use.
  const east = rd.map(([x, y]) => [(x as number) + 265000, y as number])
  const outside = expectError(t, await send('POST', '/collections/sources/items', feature('too-east', { coordinates: [east] }), { 'content-crs': EPSG(28992) }), 422, 'OUTSIDE_CRS_AREA')
  t.equal(outside.details?.[0]?.pointer, '/features/0/geometry/coordinates/0/0', 'a Feature is checked as a collection of one, as without Content-Crs')
  t.match(outside.details?.[0]?.message, /outside the area of use of EPSG:28992/)
  const far = expectError(t, await send('POST', '/sources', { type: 'FeatureCollection', features: [feature('far', { coordinates: [rd.map(([x, y]) => [(x as number) * 1e9, y as number])] })] }, { 'content-crs': EPSG(28992) }), 422, 'OUTSIDE_CRS_AREA')
  t.equal(far.details?.[0]?.pointer, '/features/0/geometry/coordinates/0/0')

  const bare = expectError(t, await send('POST', '/collections/sources/items', feature('no-header', { coordinates: [rd] })), 400, 'INVALID_GEOJSON')
  t.match(bare.message, /longitude 135000.1234 is outside \[-180, 180\].*send the header Content-Crs/)

  const unknown = expectError(t, await get('/collections/sources/items?crs=EPSG:9999999'), 400, 'VALIDATION_FAILED')
  t.equal(unknown.details?.[0]?.pointer, '?crs')
  t.match(unknown.details?.[0]?.message, EPSG(28992))
  expectError(t, await get('/collections/sources/items?bbox=0,0,1,1&bbox-crs=EPSG:1'), 400, 'VALIDATION_FAILED')
  const [anyId] = ((await get('/collections/sources/items?limit=1')).json() as { features: Feature[] }).features.map((f) => f.id)
  expectError(t, await get(`/collections/sources/items/${anyId ?? ''}?crs=EPSG:1`), 400, 'VALIDATION_FAILED')
  const header = expectError(t, await send('POST', '/sources', { type: 'FeatureCollection', features: [feature('h', { coordinates: [rd] })] }, { 'content-crs': EPSG(1) }), 400, 'VALIDATION_FAILED')
  t.match(header.message, /Content-Crs/)
})
