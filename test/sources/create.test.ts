// POST /sources: success shapes, every 400/409/413/415/422 path, all-or-nothing.
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'kysely'
import { CreateResponseSchema } from '../../src/sources/sources.schema.js'
import { backend, build, collection, fastPath, feature, session, square, expectError } from '../helper.js'

const ctx = await build(t, { MAX_FEATURES: 5, BODY_LIMIT_BYTES: 64 * 1024 })
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-a')

const post = (payload: unknown, headers: Record<string, string> = editor.headers) =>
  app.inject({ method: 'POST', url: '/sources', headers, payload: payload as object })

const count = async (): Promise<number> => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM sources`.execute(db)).rows[0]?.n)


t.test('one feature: 201 with id, message, sources and Location', async (t) => {
  const res = await post(collection(feature('parcel-1')))
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.ok(Value.Check(CreateResponseSchema, body))
  t.match(body.id, /^src_[0-9A-Za-z]{22}$/)
  t.same(body.sources, [{ id: body.id, feature_id: 'parcel-1', conflicts: [] }])
  t.equal(res.headers.location, `/sources/?id=${body.id}`)
  const row = await sql<{ organisation: string, wkt: string, lo: string }>`
    SELECT organisation, ST_AsText(geom) AS wkt, to_char(lower(period) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS lo
    FROM sources WHERE id = ${body.id}`.execute(db)
  t.same(row.rows[0], { organisation: 'org-a', wkt: 'POLYGON((10 50,11 50,11 51,10 51,10 50))', lo: '2024-01-01 00:00' })
})

t.test('several features: one transaction, ids in request order, no top-level id', async (t) => {
  const res = await post(collection(feature('a', { coordinates: square(0, 0) }), feature('b', { coordinates: square(2, 2) }), feature('c', { coordinates: square(4, 4) })))
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.ok(Value.Check(CreateResponseSchema, body))
  t.equal(body.id, undefined)
  t.same(body.sources.map((s: { feature_id: string }) => s.feature_id), ['a', 'b', 'c'])
  t.equal(new Set(body.sources.map((s: { id: string }) => s.id)).size, 3)
  t.equal(res.headers.location, undefined)
})

t.test('each feature keeps its own polygon and period (one MultiPolygon split back in order)', async (t) => {
  const withHole = [[[20, 20], [21, 20], [21, 21], [20, 21], [20, 20]], [[20.2, 20.2], [20.2, 20.4], [20.4, 20.4], [20.4, 20.2], [20.2, 20.2]]]
  const features = [0, 1, 2, 3, 4].map((i) => feature(`keep-${i}`, {
    coordinates: i === 2 ? withHole : square(i * 2, -i * 2, 0.5),
    start: `2024-0${i + 1}-01T00:00:00Z`,
    end: `2024-0${i + 2}-01T00:00:00Z`
  }))
  const res = await post(collection(...features))
  t.equal(res.statusCode, 201)
  const ids = res.json().sources.map((s: { id: string }) => s.id)
  const rows = await sql<{ id: string, feature_id: string, wkt: string, lo: string }>`
    SELECT id, feature_id, ST_AsText(geom) AS wkt, to_char(lower(period) AT TIME ZONE 'UTC', 'YYYY-MM') AS lo
    FROM sources WHERE id = ANY(${ids}::text[])`.execute(db)
  const byId = new Map(rows.rows.map((r) => [r.id, r]))
  ids.forEach((id: string, i: number) => {
    const ring = (r: number[][]) => `(${r.map((p) => p.join(' ')).join(',')})`
    const coordinates = (features[i] as { geometry: { coordinates: number[][][] } }).geometry.coordinates
    t.same(byId.get(id), { id, feature_id: `keep-${i}`, wkt: `POLYGON(${coordinates.map(ring).join(',')})`, lo: `2024-0${i + 1}` }, `feature ${i}`)
  })
})

t.test('application/geo+json is accepted; other media types are 415', async (t) => {
  const ok = await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/geo+json' }, payload: JSON.stringify(collection(feature('geo'))) })
  t.equal(ok.statusCode, 201)
  const bad = await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'text/plain' }, payload: JSON.stringify(collection(feature('txt'))) })
  const body = expectError(t, bad, 415, 'UNSUPPORTED_MEDIA_TYPE')
  t.equal(body.message, 'Unsupported Content-Type "text/plain": send application/json or application/geo+json.', 'the accepted media types are named')
})

t.test('altitude is accepted and dropped; holes, bbox and foreign members are fine', async (t) => {
  const withHole = [
    [[20, 20, 5], [30, 20, 5], [30, 30, 5], [20, 30, 5], [20, 20, 5]],
    [[22, 22], [22, 24], [24, 24], [24, 22], [22, 22]]
  ]
  const fc = { ...collection({ ...feature('3d', { coordinates: withHole }), bbox: [20, 20, 30, 30], properties: { start_at: '2024-01-01', end_at: '2024-02-01', colour: 'red' }, extra: true }), bbox: [20, 20, 30, 30], name: 'x' }
  const res = await post(fc)
  t.equal(res.statusCode, 201, res.body)
  const row = await sql<{ wkt: string }>`SELECT ST_AsText(geom) AS wkt FROM sources WHERE id = ${res.json().id}`.execute(db)
  t.equal(row.rows[0]?.wkt, 'POLYGON((20 20,30 20,30 30,20 30,20 20),(22 22,22 24,24 24,24 22,22 22))')
})

t.test('date forms: Z, offsets, fractions, date alone', async (t) => {
  const res = await post(collection(feature('dates', { start: '2024-03-01T10:30:00.123456+02:00', end: '2024-03-02' })))
  t.equal(res.statusCode, 201, res.body)
  const row = await sql<{ lo: string, hi: string }>`
    SELECT to_char(lower(period) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS lo,
           to_char(upper(period) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS hi
    FROM sources WHERE id = ${res.json().id}`.execute(db)
  t.same(row.rows[0], { lo: '2024-03-01T08:30:00.123456', hi: '2024-03-02T00:00:00.000000' })
})

t.test('400: invalid GeoJSON structure, with a pointer to the problem', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['not a FeatureCollection', { type: 'Feature', features: [] }, '/type'],
    ['no features', collection(), '/features'],
    ['features not an array', { type: 'FeatureCollection', features: {} }, '/features'],
    ['missing id', collection({ ...feature('x'), id: undefined }), '/features/0/id'],
    ['object id', collection({ ...feature('x'), id: { n: 7 } }), '/features/0/id'],
    ['fractional id', collection({ ...feature('x'), id: 7.5 }), '/features/0/id'],
    ['empty id', collection(feature('')), '/features/0/id'],
    ['id too long', collection(feature('x'.repeat(257))), '/features/0/id'],
    ['missing properties', collection({ ...feature('x'), properties: undefined }), '/features/0/properties'],
    ['missing end_at', collection({ ...feature('x'), properties: { start_at: '2024-01-01' } }), '/features/0/properties/end_at'],
    ['Point geometry', collection({ ...feature('x'), geometry: { type: 'Point', coordinates: [1, 2] } }), '/features/0/geometry/type'],
    ['null geometry', collection({ ...feature('x'), geometry: null }), '/features/0/geometry'],
    ['string coordinate', collection(feature('x', { coordinates: [[['1', 2], [3, 4], [5, 6], ['1', 2]]] })), '/features/0/geometry/coordinates/0/0/0'],
    ['ring of 3 positions', collection(feature('x', { coordinates: [[[0, 0], [1, 0], [0, 0]]] })), '/features/0/geometry/coordinates/0'],
    ['position of 4 numbers', collection(feature('x', { coordinates: [[[0, 0, 0, 0], [1, 0], [1, 1], [0, 0]]] })), '/features/0/geometry/coordinates/0/0'],
    ['no rings', collection(feature('x', { coordinates: [] })), '/features/0/geometry/coordinates'],
    ['second feature wrong', collection(feature('ok'), { ...feature('bad'), type: 'Thing' }), '/features/1/type']
  ]
  for (const [name, payload, pointer] of cases) {
    const body = expectError(t, await post(payload), 400, 'INVALID_GEOJSON')
    t.equal(body.details?.[0]?.pointer, pointer, `${name}: pointer`)
  }
})

t.test('400: RFC 7946 rules beyond the schema, every problem listed with feature index and id', async (t) => {
  const open = [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0.5]]]
  const badLon = [[[0, 0], [181, 0], [1, 1], [0, 0]]]
  const badLat = [[[0, 0], [1, -91], [1, 1], [0, 0]]]
  const openHole = [square(0, 0, 10)[0], [[2, 2], [2, 3], [3, 3], [3, 2]]]
  const body = expectError(t, await post(collection(
    feature('open', { coordinates: open }), feature('lon', { coordinates: badLon }),
    feature('lat', { coordinates: badLat }), feature('hole', { coordinates: openHole })
  )), 400, 'INVALID_GEOJSON')
  t.match(body.details, [
    { pointer: '/features/0/geometry/coordinates/0', feature_index: 0, feature_id: 'open', message: /ring 0 \(exterior\) is not closed/ },
    { pointer: '/features/1/geometry/coordinates/0/1/0', feature_index: 1, feature_id: 'lon', message: /longitude 181/ },
    { pointer: '/features/2/geometry/coordinates/0/1/1', feature_index: 2, feature_id: 'lat', message: /latitude -91/ },
    { pointer: '/features/3/geometry/coordinates/1', feature_index: 3, feature_id: 'hole', message: /ring 1 \(hole\) is not closed/ }
  ])
  t.match(body.message, /^\/features\/0\/geometry\/coordinates\/0 .* \(and 3 more problems\)$/)
  const big = '[[[0,0],[1e400,0],[1,1],[0,0]]]'
  const inf = await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/json' }, payload: `{"type":"FeatureCollection","features":[{"type":"Feature","id":"inf","properties":{"start_at":"2024-01-01","end_at":"2024-02-01"},"geometry":{"type":"Polygon","coordinates":${big}}}]}` })
  t.match(expectError(t, inf, 400, 'INVALID_GEOJSON').details?.[0], { pointer: '/features/0/geometry/coordinates/0/1/0', message: 'is out of range: a number must lie within ±1.8e308 (a double\'s range)' }, '1e400 parses to Infinity: out of range, not "must be number"')
})

t.test('400: date-times that are not ISO 8601 with an offset', async (t) => {
  for (const bad of ['2024-01-01T10:00:00', 'yesterday', '2024-13-01', '2024-02-30', '2024-01-01T25:00:00Z', '2024-01-01T10:00:00+16:00', '0000-01-01', '20240101T000000Z']) {
    const body = expectError(t, await post(collection(feature('d', { start: bad }))), 400, 'INVALID_GEOJSON')
    t.equal(body.details?.[0]?.pointer, '/features/0/properties/start_at', bad)
  }
  const local = expectError(t, await post(collection(feature('d', { end: '2024-06-01T10:00' }))), 400, 'INVALID_GEOJSON')
  t.match(local.details?.[0]?.message, /no offset/)
  expectError(t, await post(collection(feature('d', { start: 20240101 }))), 400, 'INVALID_GEOJSON')
})

t.test('400: malformed JSON and empty body', async (t) => {
  expectError(t, await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/json' }, payload: '{"type":' }), 400, 'BAD_REQUEST')
  expectError(t, await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/json' }, payload: '' }), 400, 'BAD_REQUEST')
  expectError(t, await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': 'application/json' }, payload: '{"__proto__":{"x":1}}' }), 400, 'BAD_REQUEST')
})

t.test('400: more than MAX_FEATURES features; 413: body over BODY_LIMIT_BYTES', async (t) => {
  const six = collection(...Array.from({ length: 6 }, (_, i) => feature(`f${i}`, { coordinates: square(i * 2, 0) })))
  t.equal(expectError(t, await post(six), 400, 'INVALID_GEOJSON').details?.[0]?.pointer, '/features')
  const huge = collection(feature('huge', { coordinates: [Array.from({ length: 5000 }, (_, i) => [i / 1000.123, 0.123456789]).concat([[0, 0]])] }))
  expectError(t, await post(huge), 413, 'PAYLOAD_TOO_LARGE')
})

t.test('422: start not before end, outside the window, invalid polygon', async (t) => {
  const before = await count()
  const same = expectError(t, await post(collection(feature('p', { start: '2024-01-02T00:00:00Z', end: '2024-01-02T02:00:00+02:00' }))), 422, 'INVALID_PERIOD')
  t.match(same.details?.[0], { pointer: '/features/0/properties', feature_index: 0, feature_id: 'p', message: /strictly before/ })
  expectError(t, await post(collection(feature('p', { start: '2024-02-01', end: '2024-01-01' }))), 422, 'INVALID_PERIOD')

  const early = expectError(t, await post(collection(feature('ok'), feature('old', { start: '1899-12-31T23:59:59Z', end: '1950-01-01' }))), 422, 'INVALID_PERIOD')
  t.match(early.details, [{ pointer: '/features/1/properties', feature_index: 1, feature_id: 'old', message: /\[1900-01-01T00:00:00Z, 2100-01-01T00:00:00Z\)/ }])
  expectError(t, await post(collection(feature('late', { start: '2099-01-01', end: '2100-01-01T00:00:00.000001Z' }))), 422, 'INVALID_PERIOD')
  t.equal((await post(collection(feature('edge', { start: '1900-01-01', end: '2100-01-01' })))).statusCode, 201, 'the window itself is accepted')

  const bowtie = [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]
  const geom = expectError(t, await post(collection(feature('fine', { coordinates: square(40, 40) }), feature('bowtie', { coordinates: bowtie }))), 422, 'INVALID_GEOMETRY')
  t.match(geom.details, [{ pointer: '/features/1/geometry/coordinates/0', feature_index: 1, feature_id: 'bowtie', reason: /Self-intersection/, location: [1, 1], ring: 0 }])
  t.match(geom.message, /Self-intersection.*\[1, 1\]/)

  const holeOutside = [square(0, 0, 1)[0], [[5, 5], [5, 6], [6, 6], [6, 5], [5, 5]]]
  const hole = expectError(t, await post(collection(feature('h', { coordinates: holeOutside }))), 422, 'INVALID_GEOMETRY')
  t.match(hole.details?.[0], { reason: /Hole lies outside shell/, ring: 1, pointer: '/features/0/geometry/coordinates/1' })
  t.equal(await count(), before + 1, 'nothing but the valid "edge" source was stored')
})

t.test('422: the same feature id twice with overlapping periods in one request', async (t) => {
  const body = expectError(t, await post(collection(feature('twin'), feature('other'), feature('twin', { start: '2024-06-01', end: '2025-01-01' }))), 422, 'DUPLICATE_FEATURE')
  t.match(body.details, [{ pointer: '/features/2/id', feature_index: 2, feature_id: 'twin', message: /same id as feature 0/ }])
  const ok = await post(collection(feature('twin2', { start: '2024-01-01', end: '2024-06-01' }), feature('twin2', { start: '2024-06-01', end: '2025-01-01' })))
  t.equal(ok.statusCode, 201, 'adjacent periods [a,b) [b,c) do not overlap')
})

t.test('409: a retry of an acknowledged POST names the existing source; nothing is duplicated', async (t) => {
  const first = await post(collection(feature('retry-me')))
  t.equal(first.statusCode, 201)
  const before = await count()
  const again = expectError(t, await post(collection(feature('new-one', { coordinates: square(60, 60) }), feature('retry-me'))), 409, 'SOURCE_CONFLICT')
  t.match(again.details, [{ pointer: '/features/1/id', feature_index: 1, feature_id: 'retry-me', existing_id: first.json().id }])
  t.match(again.message, first.json().id)
  t.equal(await count(), before, 'all or nothing: the new feature was not stored either')
  const later = await post(collection(feature('retry-me', { start: '2025-01-01', end: '2026-01-01' })))
  t.equal(later.statusCode, 201, 'same feature id, non-overlapping period is fine')
  const otherOrg = await session(ctx, 'editor', 'org-b')
  t.equal((await post(collection(feature('retry-me')), otherOrg.headers)).statusCode, 201, 'another organisation may use the same feature id')
})

t.test('403 for viewers, 401 without a token', async (t) => {
  const viewer = await session(ctx, 'viewer', 'org-a')
  expectError(t, await post(collection(feature('v')), viewer.headers), 403, 'FORBIDDEN')
  expectError(t, await post(collection(feature('v')), {}), 401, 'UNAUTHORIZED')
  const admin = await session(ctx, 'admin', 'hq')
  t.equal((await post(collection(feature('adm')), admin.headers)).statusCode, 201)
})

t.test('concurrent POSTs, batched into shared INSERTs, each keep their own owner and outcome', async (t) => {
  // One insert in flight at a time, so the others go out together.
  const ctx1 = await build(t, { DB_WRITES_IN_FLIGHT: 1 })
  const a = await session(ctx1, 'editor', 'org-a')
  const b = await session(ctx1, 'editor', 'org-b')
  const orgOf = (s: typeof a) => s === a ? 'org-a' : 'org-b'
  type Req = { s: typeof a, body: unknown, expect: number | number[] }
  async function send (requests: Req[]) {
    const results = await Promise.all(requests.map((r) => ctx1.app.inject({ method: 'POST', url: '/sources', headers: r.s.headers, payload: r.body as object })))
    results.forEach((res, i) => { t.ok([requests[i]?.expect].flat().includes(res.statusCode), `request ${i}: ${res.body.slice(0, 120)}`) })
    const created = results.flatMap((res, i) => res.statusCode === 201
      ? (res.json().sources as Array<{ id: string, feature_id: string }>).map((s) => ({ ...s, org: orgOf(requests[i]?.s as typeof a) }))
      : [])
    const rows = (await sql<{ id: string, feature_id: string, organisation: string, tx: string }>`
      SELECT id, feature_id, organisation, xmin::text AS tx FROM sources WHERE id = ANY(${created.map((c) => c.id)}::text[])`.execute(ctx1.db)).rows
    t.equal(rows.length, created.length, 'every acknowledged source is stored')
    const byId = new Map(rows.map((r) => [r.id, r]))
    for (const c of created) t.same({ feature_id: byId.get(c.id)?.feature_id, organisation: byId.get(c.id)?.organisation }, { feature_id: c.feature_id, organisation: c.org })
    return { results, transactions: new Set(rows.map((r) => r.tx)).size }
  }

  // All valid: rows of many requests share a transaction (xmin).
  const valid = await send(Array.from({ length: 16 }, (_, i) => ({ s: i % 2 === 0 ? a : b, body: collection(feature(`ok-${i}`, { coordinates: square(i, 10) }), feature(`ok-${i}-second`, { coordinates: square(i, 20) })), expect: 201 })))
  // The server backend only: PGlite runs each statement on the main thread, and the requests
  // here reach the writer one after another there, so batches of one are all it sees.
  // The fast path only: the plain path stores each request in its own transaction.
  if (backend === 'server' && fastPath) t.ok(valid.transactions <= 4, `16 requests stored in ${valid.transactions} transactions`)
  if (!fastPath) t.equal(valid.transactions, 16, 'the plain path: one transaction per request')

  // A batch with requests that fail: each request still gets its own answer.
  const bowtie = [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]
  const mixed = await send([
    { s: a, body: collection(feature('first', { coordinates: square(1, 1) })), expect: 201 },
    // Of two conflicting requests (same org, feature id, period) the one that reaches the
    // database first wins (which one depends on how their authentication queries race); the
    // other gets 409.
    { s: a, body: collection(feature('twice', { coordinates: square(30, 30) })), expect: [201, 409] },
    { s: a, body: collection(feature('twice', { coordinates: square(31, 31) })), expect: [201, 409] },
    // The same feature id in another organisation is another source.
    { s: b, body: collection(feature('twice', { coordinates: square(32, 32) })), expect: 201 },
    { s: b, body: collection(feature('bowtie', { coordinates: bowtie })), expect: 422 },
    ...Array.from({ length: 6 }, (_, i) => ({ s: i % 2 === 0 ? b : a, body: collection(feature(`late-${i}`, { coordinates: square(i, 40) })), expect: 201 }))
  ])
  const pair = [mixed.results[1], mixed.results[2]]
  t.same(pair.map((r) => r?.statusCode).sort(), [201, 409], 'exactly one of the two conflicting requests is stored')
  const winner = pair.find((r) => r?.statusCode === 201)?.json()
  const conflict = pair.find((r) => r?.statusCode === 409)?.json()
  t.equal(conflict?.code, 'SOURCE_CONFLICT')
  t.equal(conflict?.details?.[0]?.existing_id, winner?.id, 'the 409 names the source of the request that won')
  t.match(mixed.results[4]?.json(), { code: 'INVALID_GEOMETRY', details: [{ feature_index: 0, feature_id: 'bowtie', reason: /Self-intersection/ }] })
})
