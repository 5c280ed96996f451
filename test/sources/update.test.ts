// Issue 34: PUT and PATCH with ETags and If-Match, versions written by the database, as_of, and
// DELETE that keeps the record (410).
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'kysely'
import { SourceFeatureSchema, VersionFeatureSchema, VersionsResponseSchema } from '../../src/sources/source-feature.schema.js'
import { build, collection, expectError, feature, session, square } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const viewerA = await session(ctx, 'viewer', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'hq')

let n = 0
async function create (coordinates = square(10, 50), start = '2024-01-01T00:00:00Z', end = '2024-12-31T00:00:00Z'): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(feature(`f-${++n}`, { coordinates, start, end })) })
  t.equal(res.statusCode, 201, res.body)
  return res.json().id
}

const get = (id: string, headers: Record<string, string> = editorA.headers, query = '') =>
  app.inject({ method: 'GET', url: `/sources/?id=${id}${query}`, headers })
const put = (id: string, body: unknown, headers: Record<string, string>) =>
  app.inject({ method: 'PUT', url: `/sources/?id=${id}`, headers: { ...editorA.headers, ...headers }, payload: body as object })
const patch = (id: string, body: unknown, headers: Record<string, string>, auth = editorA.headers) =>
  app.inject({ method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...auth, 'content-type': 'application/merge-patch+json', ...headers }, payload: JSON.stringify(body) })

t.test('GET carries an ETag and version 1; If-None-Match gives 304', async (t) => {
  const id = await create()
  const res = await get(id)
  t.equal(res.statusCode, 200)
  t.equal(res.headers.etag, 'W/"1"')
  const body = res.json()
  t.ok(Value.Check(SourceFeatureSchema, body), 'schema')
  t.equal(body.properties.version, 1)
  t.equal(body.properties.updated_at, body.properties.created_at)
  const again = await get(id, { ...editorA.headers, 'if-none-match': 'W/"1"' })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
})

t.test('PUT replaces, PATCH merges; both need If-Match (428) and a current one (412)', async (t) => {
  const id = await create()
  expectError(t, await put(id, feature('renamed', { coordinates: square(20, 40) }), {}), 428, 'PRECONDITION_REQUIRED')
  expectError(t, await put(id, feature('renamed', { coordinates: square(20, 40) }), { 'if-match': 'W/"7"' }), 412, 'PRECONDITION_FAILED')
  t.equal((await get(id)).json().properties.version, 1, 'nothing changed')

  const replaced = await put(id, feature('renamed', { coordinates: square(20, 40), start: '2025-01-01', end: '2025-06-01' }), { 'if-match': 'W/"1"' })
  t.equal(replaced.statusCode, 200, replaced.body)
  t.equal(replaced.headers.etag, 'W/"2"')
  const body = replaced.json()
  t.ok(Value.Check(SourceFeatureSchema, body))
  t.equal(body.properties.feature_id, 'renamed')
  t.equal(body.properties.version, 2)
  t.same(body.geometry.coordinates, square(20, 40))
  t.same(body, (await get(id)).json(), 'as GET returns it')

  expectError(t, await patch(id, { properties: { end_at: '2027-01-01T00:00:00Z' } }, {}), 428, 'PRECONDITION_REQUIRED')
  const patched = await patch(id, { properties: { end_at: '2027-01-01T00:00:00Z' } }, { 'if-match': '"2"' })
  t.equal(patched.statusCode, 200, patched.body)
  t.equal(patched.json().properties.end_at, '2027-01-01T00:00:00Z')
  t.equal(patched.json().properties.start_at, '2025-01-01T00:00:00Z', 'unnamed members unchanged')
  t.equal(patched.json().properties.version, 3)
  t.not(patched.json().properties.updated_at, undefined)

  const viaJson = await app.inject({ method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'if-match': 'W/"3"' }, payload: { properties: {} } })
  expectError(t, viaJson, 415, 'UNSUPPORTED_MEDIA_TYPE')
  expectError(t, await patch(id, { properties: { end_at: '2027-02-01' } }, { 'if-match': 'W/"3"' }, viewerA.headers), 403, 'FORBIDDEN')
  expectError(t, await patch(id, { properties: { end_at: '2027-02-01' } }, { 'if-match': 'W/"3"' }, editorB.headers), 404, 'NOT_FOUND')
})

t.test('validation is POST\'s, with pointers into this body; a clash in time is 409', async (t) => {
  const id = await create()
  const open = square(30, 30)
  ;(open[0] as number[][])[4] = [30.5, 30.5]
  const bad = expectError(t, await put(id, feature('x', { coordinates: open }), { 'if-match': 'W/"1"' }), 400, 'INVALID_GEOJSON')
  t.equal(bad.details?.[0]?.pointer, '/geometry/coordinates/0')
  const order = expectError(t, await patch(id, { properties: { end_at: '2023-01-01' } }, { 'if-match': 'W/"1"' }), 422, 'INVALID_PERIOD')
  t.equal(order.details?.[0]?.pointer, '/properties')
  const bowtie = [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]
  const invalid = expectError(t, await patch(id, { geometry: { coordinates: bowtie } }, { 'if-match': 'W/"1"' }), 422, 'INVALID_GEOMETRY')
  t.match(invalid.details?.[0]?.pointer, /^\/geometry/)
  for (const body of [{ id: 'x' }, { colour: 'red' }, [1, 2], { geometry: null }, { properties: { start_at: null } }, { properties: null }]) {
    expectError(t, await patch(id, body, { 'if-match': 'W/"1"' }), 400, 'INVALID_GEOJSON')
  }
  const other = await create(square(60, 10), '2024-01-01', '2024-12-31')
  const otherFeatureId = (await get(other)).json().properties.feature_id
  const clash = expectError(t, await put(id, feature(otherFeatureId, { coordinates: square(10, 50) }), { 'if-match': 'W/"1"' }), 409, 'SOURCE_CONFLICT')
  t.equal(clash.details?.[0]?.existing_id, other)
  t.equal(clash.details?.[0]?.pointer, '/id')
  t.equal((await get(id)).json().properties.version, 1, 'nothing changed')
})

t.test('merge-patch fuzzing: nulls, arrays, unknown members, -0, huge numbers are 400s, never a 500', async (t) => {
  const id = await create()
  const send = async (payload: string) => {
    const current = (await get(id)).json().properties.version as number
    return await app.inject({ method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'content-type': 'application/merge-patch+json', 'if-match': `W/"${current}"` }, payload })
  }
  const invalid: string[] = ['null', '[]', '1', '"x"', 'true', '{"geometry":{"coordinates":[[[-0,-0],[1e400,0],[1,1],[-0,-0]]]}}',
    '{"geometry":{"coordinates":[[[0,0],[1e308,0],[1,1],[0,0]]]}}', '{"geometry":{"coordinates":[[[0,0],[-1e400,0],[1,1],[0,0]]]}}',
    '{"geometry":{"type":"Point"}}', '{"geometry":[]}', '{"geometry":{"coordinates":[]}}', '{"geometry":{"coordinates":[[]]}}',
    '{"geometry":{"coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0.5]]]}}', '{"geometry":{"coordinates":[["a","b","c","d"]]}}',
    '{"properties":{"start_at":12345678901234567890}}', '{"properties":{"end_at":[]}}', '{"properties":{"end_at":-0}}', '{"properties":{"start_at":1e400}}',
    '{"properties":{"start_at":"-0"}}', '{"properties":{"start_at":""}}', '{"properties":[]}',
    '{"type":null}', '{"type":"FeatureCollection"}', '{"bbox":null}', '{"bbox":[0,0,1,1]}', '{"organisation":"org-b"}', '{"id":null}',
    '{"geometry":{"coordinates":null}}', '{"geometry":null}', '{"properties":null}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}',
    '{"a/b~c":1}', '{"properties":{"start_at":"2024-13-01"}}', '{"properties":{"end_at":"2024-02-30T00:00:00Z"}}', '{', '{"geometry":{"coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]],"type":"Polygon","bbox":"x"}}']
  for (const payload of invalid) {
    const res = await send(payload)
    t.equal(res.statusCode, 400, `${payload}: ${res.statusCode} ${res.body.slice(0, 200)}`)
  }
  t.equal((await get(id)).json().properties.version, 1, 'none of them changed anything')
  const huge = expectError(t, await send('{"geometry":{"coordinates":[[[0,0],[-1e400,0],[1,1],[0,0]]]}}'), 400, 'INVALID_GEOJSON')
  t.match(huge.details?.[0], { pointer: '/geometry/coordinates/0/1/0', message: /^is out of range: a number must lie within ±1\.8e308/ }, '-1e400 in a merge patch')
  // Valid patches, with -0 and numbers at the edge of a double: applied, or refused with a 4xx, never a 500.
  const odd = ['{"geometry":{"coordinates":[[[-0,0],[1,0],[1,1],[0,1],[-0,0]]]}}', '{"geometry":{"coordinates":[[[0,0],[1e-320,0],[1,1],[0,0]]]}}',
    '{"type":"Feature","properties":{}}', '{}', '{"geometry":{"type":"Polygon"}}', '{"properties":{"end_at":"2099-12-31T23:59:59.999999Z"}}',
    '{"properties":{"end_at":"2100-01-01T00:00:00.000001Z"}}', '{"properties":{"start_at":"2024-12-31T00:00:00Z"}}']
  for (const payload of odd) {
    const res = await send(payload)
    t.ok(res.statusCode === 200 || (res.statusCode >= 400 && res.statusCode < 500), `${payload}: ${res.statusCode} ${res.body.slice(0, 200)}`)
  }
})

t.test('two PATCHes with the same If-Match: one wins, the other gets 412', async (t) => {
  const id = await create()
  const [a, b] = await Promise.all([
    patch(id, { properties: { end_at: '2025-01-01' } }, { 'if-match': 'W/"1"' }),
    patch(id, { properties: { end_at: '2025-02-01' } }, { 'if-match': 'W/"1"' })
  ])
  t.same([a.statusCode, b.statusCode].sort(), [200, 412])
  t.equal((await get(id)).json().properties.version, 2)
})

t.test('a malformed If-Match is a 400 showing the form (not a 412 for a change nobody made); a malformed If-None-Match is ignored', async (t) => {
  const id = await create()
  for (const [header, form] of [['1', 'W/"1"'], ['W/1', 'W/"1"'], ['"1', 'W/"1"'], ['W/"1", 2', 'W/"2"'], ['abc', 'W/"1"']] as const) {
    const body = expectError(t, await patch(id, { properties: { end_at: '2025-01-01' } }, { 'if-match': header }), 400, 'VALIDATION_FAILED')
    t.match(body.message, `is not an entity tag: send the ETag as the GET gave it, quotes included, such as ${form}`, `If-Match: ${header}`)
  }
  const del = expectError(t, await app.inject({ method: 'DELETE', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'if-match': '1' } }), 400, 'VALIDATION_FAILED')
  t.match(del.message, /W\/"1"/)
  const item = expectError(t, await app.inject({ method: 'DELETE', url: `/collections/sources/items/${id}`, headers: { ...editorA.headers, 'if-match': '1' } }), 400, 'VALIDATION_FAILED')
  t.match(item.message, /W\/"1"/)
  t.equal((await get(id)).json().properties.version, 1, 'nothing changed')
  expectError(t, await patch(id, { properties: { end_at: '2025-01-01' } }, { 'if-match': 'W/"abc"' }), 412, 'PRECONDITION_FAILED')
  t.equal((await get(id, { ...editorA.headers, 'if-none-match': '1' })).statusCode, 200, 'If-None-Match: 1 names no tag: the full answer')
  t.equal((await get(id, { ...editorA.headers, 'if-none-match': '1, W/"1"' })).statusCode, 304, 'a list still matches by its tags')
})

t.test('If-Match: * and a list of tags; an admin changes any organisation\'s source, keeping it there', async (t) => {
  const id = await create()
  const any = await patch(id, { properties: { end_at: '2025-01-01' } }, { 'if-match': '*' })
  t.equal(any.statusCode, 200, `If-Match: * matches the current version (${any.body.slice(0, 120)})`)
  t.equal(any.json().properties.version, 2)
  expectError(t, await patch(id, { properties: { end_at: '2025-02-01' } }, { 'if-match': 'W/"1", W/"3"' }), 412, 'PRECONDITION_FAILED')
  const listed = await patch(id, { properties: { end_at: '2025-02-01' } }, { 'if-match': 'W/"1", W/"2"' })
  t.equal(listed.statusCode, 200, 'a list naming the current version matches')
  const byAdmin = await put(id, feature('by-admin', { coordinates: square(12, 52) }), { ...admin.headers, 'if-match': 'W/"3"' })
  t.equal(byAdmin.statusCode, 200, byAdmin.body)
  t.match(byAdmin.json(), { geometry: { coordinates: square(12, 52) }, properties: { feature_id: 'by-admin', version: 4, organisation: 'org-a' } })
  expectError(t, await patch(id, { properties: { end_at: '2025-03-01' } }, { 'if-match': '*' }, editorB.headers), 404, 'NOT_FOUND')
  const recorded = await sql<{ recorded_by: string }>`SELECT recorded_by FROM source_versions WHERE source_id = ${id} AND version = 4`.execute(db)
  t.match(recorded.rows[0]?.recorded_by, /@/, 'the admin\'s e-mail recorded')
})

t.test('versions, newest first, paged; a SQL UPDATE is versioned with the role; as_of between versions', async (t) => {
  const id = await create()
  const v1 = (await get(id)).json()
  await new Promise((resolve) => setTimeout(resolve, 20))
  const between = new Date().toISOString()
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal((await patch(id, { properties: { end_at: '2025-03-01' } }, { 'if-match': 'W/"1"' })).statusCode, 200)
  await sql`UPDATE sources SET period = tstzrange('2024-01-01', '2025-04-01', '[)') WHERE id = ${id}`.execute(db)
  const role = (await sql<{ r: string }>`SELECT current_user AS r`.execute(db)).rows[0]?.r

  const res = await app.inject({ method: 'GET', url: `/sources/versions?id=${id}`, headers: editorA.headers })
  t.equal(res.statusCode, 200, res.body)
  const body = res.json()
  t.ok(Value.Check(VersionsResponseSchema, body), 'schema')
  t.same(body.versions.map((v: { version: number }) => v.version), [3, 2, 1])
  t.same(body.versions.map((v: { operation: string }) => v.operation), ['update', 'update', 'create'])
  t.same(body.versions.map((v: { recorded_by: string }) => v.recorded_by), [role, editorA.account.email, editorA.account.email])
  t.equal(body.versions[0].feature.properties.end_at, '2025-04-01T00:00:00Z')
  t.equal((await get(id)).json().properties.version, 3, 'the SQL write bumped the version')

  const paged = await app.inject({ method: 'GET', url: `/sources/versions?id=${id}&limit=2`, headers: editorA.headers })
  t.equal(paged.statusCode, 200, paged.body)
  const next = paged.json().links.find((l: { rel: string }) => l.rel === 'next')
  t.ok(next, 'a next link')
  const rest = await app.inject({ method: 'GET', url: new URL(next.href).pathname + new URL(next.href).search, headers: editorA.headers })
  t.same(rest.json().versions.map((v: { version: number }) => v.version), [1])

  const asOf = await get(id, editorA.headers, `&as_of=${encodeURIComponent(between)}`)
  t.equal(asOf.statusCode, 200, asOf.body)
  t.ok(Value.Check(VersionFeatureSchema, asOf.json()))
  t.equal(asOf.json().properties.version, 1)
  t.equal(asOf.json().properties.end_at, v1.properties.end_at)
  expectError(t, await get(id, editorA.headers, '&as_of=2000-01-01T00:00:00Z'), 404, 'NOT_FOUND')
  expectError(t, await get(id, editorA.headers, '&as_of=yesterday'), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: `/sources/versions?id=${id}`, headers: editorB.headers }), 404, 'NOT_FOUND')

  const analyst = await sql<{ n: number }>`SELECT count(*)::int AS n FROM sources_as_of(${between}::timestamptz) WHERE id = ${id} AND version = 1`.execute(db)
  t.equal(analyst.rows[0]?.n, 1, 'sources_as_of')
})

t.test('DELETE keeps the record: 410 for the owner, 404 for others, versions intact, If-Match honoured', async (t) => {
  const id = await create()
  expectError(t, await app.inject({ method: 'DELETE', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'if-match': 'W/"9"' } }), 412, 'PRECONDITION_FAILED')
  const del = await app.inject({ method: 'DELETE', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'if-match': 'W/"1"' } })
  t.equal(del.statusCode, 200, del.body)
  const gone = expectError(t, await get(id), 410, 'GONE')
  t.equal(gone.version, 2)
  t.match(gone.deleted_at, /Z$/)
  expectError(t, await get(id, editorB.headers), 404, 'NOT_FOUND')
  expectError(t, await app.inject({ method: 'DELETE', url: `/sources/?id=${id}`, headers: editorA.headers }), 410, 'GONE')
  expectError(t, await put(id, feature('x'), { 'if-match': 'W/"2"' }), 410, 'GONE')
  const versions = (await app.inject({ method: 'GET', url: `/sources/versions?id=${id}`, headers: editorA.headers })).json()
  t.same(versions.versions.map((v: { operation: string }) => v.operation), ['delete', 'create'])
  const listed = (await app.inject({ method: 'GET', url: '/collections/sources/items?limit=1000', headers: editorA.headers })).json()
  t.notOk(listed.features.some((f: { id: string }) => f.id === id), 'not listed')
})

t.test('conflicts follow an update and a delete, the partners\' too', async (t) => {
  const a = await create(square(100, 10, 0.1), '2024-01-01', '2024-12-31')
  const b = await create(square(100.05, 10, 0.1), '2024-01-01', '2024-12-31')
  const c = await create(square(110, 10, 0.1), '2024-01-01', '2024-12-31')
  const partners = async (id: string) => (await get(id)).json().properties.conflicts.map((x: { id: string }) => x.id)
  t.same(await partners(a), [b])
  t.same(await partners(c), [])
  const moved = await patch(b, { geometry: { coordinates: square(110.05, 10, 0.1) } }, { 'if-match': 'W/"1"' })
  t.equal(moved.statusCode, 200, moved.body)
  t.same(await partners(a), [], 'the old partner lost it')
  t.same(await partners(c), [b], 'the new partner has it')
  t.same(moved.json().properties.conflicts.map((x: { id: string }) => x.id), [c])
  const later = await patch(b, { properties: { start_at: '2026-01-01', end_at: '2026-12-31' } }, { 'if-match': 'W/"2"' })
  t.equal(later.statusCode, 200, later.body)
  t.same(await partners(c), [], 'a period change counts too')
  t.equal((await patch(b, { properties: { start_at: '2024-01-01', end_at: '2024-12-31' } }, { 'if-match': 'W/"3"' })).statusCode, 200)
  t.same(await partners(c), [b])
  t.equal((await app.inject({ method: 'DELETE', url: `/sources/?id=${b}`, headers: editorA.headers })).statusCode, 200)
  t.same(await partners(c), [], 'after the delete')
})

t.test('the OGC Part 4 paths: POST a Feature or a collection (201, Location), PUT, PATCH, DELETE, versions', async (t) => {
  const conformance = (await app.inject({ method: 'GET', url: '/conformance' })).json().conformsTo
  for (const c of ['create-replace-delete', 'update', 'optimistic-locking-etags']) t.ok(conformance.includes(`http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/${c}`), c)
  const one = await app.inject({ method: 'POST', url: '/collections/sources/items', headers: { ...editorA.headers, 'content-type': 'application/geo+json' }, payload: JSON.stringify(feature('ogc-1', { coordinates: square(-40, -20) })) })
  t.equal(one.statusCode, 201, one.body)
  const id = one.json().id as string
  t.match(one.headers.location, new RegExp(`/collections/sources/items/${id}$`))
  t.equal(one.headers.etag, 'W/"1"')
  const many = await app.inject({ method: 'POST', url: '/collections/sources/items', headers: editorA.headers, payload: collection(feature('ogc-2', { coordinates: square(-45, -20) }), feature('ogc-3', { coordinates: square(-50, -20) })) })
  t.equal(many.statusCode, 201, many.body)
  t.equal(many.json().sources.length, 2)
  const bad = expectError(t, await app.inject({ method: 'POST', url: '/collections/sources/items', headers: editorA.headers, payload: feature('ogc-4', { start: '2024-05-01', end: '2024-04-01' }) }), 422, 'INVALID_PERIOD')
  t.equal(bad.details?.[0]?.pointer, '/features/0/properties')

  const item = `/collections/sources/items/${id}`
  const read = await app.inject({ method: 'GET', url: item, headers: editorA.headers })
  t.equal(read.headers.etag, 'W/"1"')
  expectError(t, await app.inject({ method: 'PUT', url: item, headers: editorA.headers, payload: feature('ogc-1b') }), 428, 'PRECONDITION_REQUIRED')
  const replaced = await app.inject({ method: 'PUT', url: item, headers: { ...editorA.headers, 'if-match': 'W/"1"' }, payload: feature('ogc-1b', { coordinates: square(-40, -25) }) })
  t.equal(replaced.statusCode, 200, replaced.body)
  t.equal(replaced.headers.etag, 'W/"2"')
  const changed = await app.inject({ method: 'PATCH', url: item, headers: { ...editorA.headers, 'if-match': 'W/"2"', 'content-type': 'application/merge-patch+json' }, payload: '{"properties":{"end_at":"2027-01-01T00:00:00Z"}}' })
  t.equal(changed.statusCode, 200, changed.body)
  t.equal(changed.json().properties.version, 3)
  const versions = await app.inject({ method: 'GET', url: `${item}/versions`, headers: editorA.headers })
  t.same(versions.json().versions.map((v: { version: number }) => v.version), [3, 2, 1])
  const del = await app.inject({ method: 'DELETE', url: item, headers: { ...editorA.headers, 'if-match': 'W/"3"' } })
  t.equal(del.statusCode, 204)
  expectError(t, await app.inject({ method: 'GET', url: item, headers: editorA.headers }), 410, 'GONE')
  const asOf = await app.inject({ method: 'GET', url: `${item}?as_of=${encodeURIComponent(changed.json().properties.updated_at)}`, headers: editorA.headers })
  t.equal(asOf.json().properties.version, 3, 'as_of on the items path')
})
