// GET and DELETE /sources/?id=: the Feature returned, organisation scoping, 400/403/404.
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { DeleteResponseSchema } from '../../src/sources/sources.schema.js'
import { SourceFeatureSchema } from '../../src/sources/source-feature.schema.js'
import { sql } from 'kysely'
import { build, collection, fastPath, feature, session, expectError } from '../helper.js'

const ctx = await build(t)
const { app } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const viewerA = await session(ctx, 'viewer', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'hq')

// Lon/lat with more digits than ST_AsGeoJSON's default 9 decimals, to check they come back exact.
const coordinates = [[[10.12345678901234, 50.1], [10.2, 50.1], [10.2, 50.2], [10.12345678901234, 50.2], [10.12345678901234, 50.1]]]

async function create (headers = editorA.headers, id = 'f-1'): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(feature(id, { coordinates, start: '2024-01-01T00:00:00.5Z', end: '2024-02-01T12:00:00+01:00' })) })
  t.equal(res.statusCode, 201, res.body)
  return res.json().id
}

const get = (id: string | undefined, headers: Record<string, string>, path = '/sources/') =>
  app.inject({ method: 'GET', url: id === undefined ? path : `${path}?id=${encodeURIComponent(id)}`, headers })
const del = (id: string, headers: Record<string, string>, path = '/sources/') =>
  app.inject({ method: 'DELETE', url: `${path}?id=${encodeURIComponent(id)}`, headers })


t.test('GET returns a GeoJSON Feature with the stored geometry and properties', async (t) => {
  const id = await create()
  for (const path of ['/sources/', '/sources']) {
    const res = await get(id, editorA.headers, path)
    t.equal(res.statusCode, 200, path)
    t.match(res.headers['content-type'], /^application\/geo\+json/)
    const body = res.json()
    t.ok(Value.Check(SourceFeatureSchema, body), 'body matches its schema')
    t.equal(body.id, id)
    t.same(body.geometry, { type: 'Polygon', coordinates })
    t.match(body.properties, {
      feature_id: 'f-1',
      start_at: '2024-01-01T00:00:00.5Z',
      end_at: '2024-02-01T11:00:00Z',
      organisation: 'org-a',
      created_at: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
    })
    // ~0.0765° × 0.1° near 50°N: about 5.48 km × 11.1 km.
    t.ok(body.properties.area_m2 > 60_000_000 && body.properties.area_m2 < 61_500_000, `geodesic area ${body.properties.area_m2}`)
  }
})

t.test('the GET body, spliced together for speed, is exactly what its schema says, whatever the strings and times', async (t) => {
  const odd = ['quote " back \\ slash', 'line\u2028separator\u2029', 'control \u0001 and \u001f', 'émoji 😀 and 中文', '</script><b>', ' ']
  const periods = [['2024-01-01T00:00:00.000001Z', '2024-01-01T00:00:00.1Z'], ['1900-01-01', '2099-12-31T23:59:59.999999Z'], ['2024-02-29T12:30:00+05:45', '2024-03-01T00:00:00-00:30']]
  for (const [i, featureId] of odd.entries()) {
    const [start, end] = periods[i % periods.length] as [string, string]
    const created = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(feature(featureId, { coordinates, start, end })) })
    // Messages name the case by number: a raw U+2028 in a message would break the TAP stream.
    t.equal(created.statusCode, 201, `case ${i} created`)
    const res = await get(created.json().id, editorA.headers)
    const body = JSON.parse(res.body)
    t.ok(Value.Check(SourceFeatureSchema, body), `case ${i}: body matches its schema`)
    const expected = await sql<{ start_at: string, end_at: string }>`
      SELECT to_json(lower(period))#>>'{}' AS start_at, to_json(upper(period))#>>'{}' AS end_at FROM sources WHERE id = ${created.json().id}`.execute(ctx.db)
    const row = expected.rows[0] as { start_at: string, end_at: string }
    t.equal(body.properties.feature_id, featureId, 'the feature id comes back byte for byte')
    t.equal(Date.parse(body.properties.start_at), Date.parse(row.start_at), 'start_at is the stored instant')
    const fraction = (/\.(\d+)/.exec(row.start_at)?.[1] ?? '').replace(/0+$/, '')
    t.equal(body.properties.start_at.slice(19), fraction === '' ? 'Z' : `.${fraction}Z`, 'with its fraction of a second, trailing zeros dropped')
    t.equal(Date.parse(body.properties.end_at), Date.parse(row.end_at))
  }
})

t.test('viewers read, admins read every organisation, other organisations get 404', async (t) => {
  const id = await create(editorA.headers, 'f-2')
  t.equal((await get(id, viewerA.headers)).statusCode, 200)
  t.equal((await get(id, admin.headers)).statusCode, 200)
  expectError(t, await get(id, editorB.headers), 404, 'NOT_FOUND')
})

t.test('GET: 400 for a missing or malformed id, 404 for an unknown one, 401 without a token', async (t) => {
  expectError(t, await get(undefined, editorA.headers), 400, 'VALIDATION_FAILED')
  expectError(t, await get(undefined, editorA.headers, '/sources'), 400, 'VALIDATION_FAILED')
  expectError(t, await get('', editorA.headers), 400, 'VALIDATION_FAILED')
  expectError(t, await get('abc', editorA.headers), 400, 'VALIDATION_FAILED')
  expectError(t, await get("src_' OR 1=1 --", editorA.headers), 400, 'VALIDATION_FAILED')
  expectError(t, await get('src_' + 'a'.repeat(1000), editorA.headers), 400, 'VALIDATION_FAILED')
  const twice = await app.inject({ method: 'GET', url: '/sources/?id=src_aaaaaaaaaaaaaaaaaaaaaa&id=src_bbbbbbbbbbbbbbbbbbbbbb', headers: editorA.headers })
  expectError(t, twice, 400, 'VALIDATION_FAILED')
  expectError(t, await get('src_0000000000000000000000', editorA.headers), 404, 'NOT_FOUND')
  expectError(t, await get('src_0000000000000000000000', {}), 401, 'UNAUTHORIZED')
  const missing = await get(undefined, editorA.headers)
  t.match(missing.json().details, [{ pointer: '?id', message: 'is required' }])
})

t.test('DELETE: 200 then 410 (the record is kept); viewers 403; other organisations 404; admins anywhere', async (t) => {
  const id = await create(editorA.headers, 'f-3')
  expectError(t, await del(id, viewerA.headers), 403, 'FORBIDDEN')
  expectError(t, await del(id, editorB.headers), 404, 'NOT_FOUND')
  const ok = await del(id, editorA.headers)
  t.equal(ok.statusCode, 200)
  t.ok(Value.Check(DeleteResponseSchema, ok.json()))
  t.match(ok.json().message, id)
  expectError(t, await del(id, editorA.headers), 410, 'GONE')
  expectError(t, await get(id, editorA.headers), 410, 'GONE')
  expectError(t, await get(id, editorB.headers), 404, 'NOT_FOUND')

  const other = await create(editorB.headers, 'f-4')
  t.equal((await del(other, admin.headers, '/sources')).statusCode, 200)
  expectError(t, await del('nope', editorA.headers), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'DELETE', url: '/sources/', headers: editorA.headers }), 400, 'VALIDATION_FAILED')
  expectError(t, await del(id, {}), 401, 'UNAUTHORIZED')
})

t.test('an unknown route is 404, a known one with another method 405, in the error shape', async (t) => {
  expectError(t, await app.inject({ method: 'GET', url: '/nope' }), 404, 'NOT_FOUND')
  const put = await app.inject({ method: 'PUT', url: '/sources/versions?id=x' })
  expectError(t, put, 405, 'METHOD_NOT_ALLOWED')
  t.equal(put.headers.allow, 'GET, HEAD')
})

t.test('concurrent GETs, coalesced into shared queries, each get their own answer', async (t) => {
  // One query in flight at a time, so nearly all of these go out in batches of many ids.
  const ctx1 = await build(t, { DB_READS_IN_FLIGHT: 1 })
  const a = await session(ctx1, 'editor', 'org-a')
  const b = await session(ctx1, 'editor', 'org-b')
  const ids: Array<{ id: string, org: 'a' | 'b' }> = []
  for (let i = 0; i < 10; i++) {
    for (const [org, s] of [['a', a], ['b', b]] as const) {
      const res = await ctx1.app.inject({ method: 'POST', url: '/sources', headers: s.headers, payload: collection(feature(`batch-${i}`, { coordinates })) })
      t.equal(res.statusCode, 201, res.body)
      ids.push({ id: res.json().id, org })
    }
  }
  const reads = ids.flatMap(({ id, org }) => [
    { id, headers: org === 'a' ? a.headers : b.headers, expect: 200 },
    { id, headers: org === 'a' ? b.headers : a.headers, expect: 404 }
  ])
  reads.push({ id: 'src_0000000000000000000000', headers: a.headers, expect: 404 })
  // Count the statements the reads send (the reader calls executeQuery on this instance).
  const db = ctx1.app.db
  const executeQuery = db.executeQuery.bind(db)
  let queries = 0
  db.executeQuery = (async (q: Parameters<typeof executeQuery>[0]) => { queries++; return executeQuery(q) }) as typeof db.executeQuery
  const results = await Promise.all(reads.map((r) => ctx1.app.inject({ method: 'GET', url: `/sources/?id=${r.id}`, headers: r.headers })))
  db.executeQuery = executeQuery
  // The fast path batches them; the plain path runs each alone (and through Kysely's builder,
  // which this count does not see): the answers below must be the same either way.
  if (fastPath) t.ok(queries > 0 && queries <= 5, `${reads.length} reads in ${queries} queries`)
  results.forEach((res, i) => {
    const r = reads[i] as typeof reads[number]
    t.equal(res.statusCode, r.expect, `${r.id} for ${r.headers.authorization === a.headers.authorization ? 'org-a' : 'org-b'}`)
    if (r.expect === 200) t.equal(res.json().id, r.id)
  })
  // A read that starts after a DELETE was acknowledged never sees the row.
  const gone = ids[0] as { id: string }
  t.equal((await ctx1.app.inject({ method: 'DELETE', url: `/sources/?id=${gone.id}`, headers: a.headers })).statusCode, 200)
  const after = await Promise.all([gone.id, ids[2]?.id].map((id) => ctx1.app.inject({ method: 'GET', url: `/sources/?id=${id}`, headers: a.headers })))
  t.same(after.map((r) => r.statusCode), [410, 200])
})
