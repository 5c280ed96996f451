// Issue 45: an organisation declares its attributes with a JSON Schema; writes after it must
// satisfy it (422 with a pointer per violation); the declared attributes are queryables, typed in
// CQL2 and served by an index; undeclared ones are properties.name; a view per organisation with
// a typed column each; the check lists sources written before the schema that it refuses.
import t from 'tap'
import { sql } from 'kysely'
import { backend, build, collection, expectError, feature, session, square } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editorA = await session(ctx, 'editor', 'acme')
const viewerA = await session(ctx, 'viewer', 'acme')
const editorB = await session(ctx, 'editor', 'other-org')
const admin = await session(ctx, 'admin', 'hq')

const SCHEMA = {
  type: 'object',
  properties: {
    parcel_no: { type: 'string', pattern: '^NL-[0-9]+$', description: 'The cadastral parcel number.' },
    hectares: { type: 'number', minimum: 0, title: 'Hectares' },
    planted: { type: 'string', format: 'date' },
    certified: { type: 'boolean' },
    owner: { type: 'object' }
  },
  required: ['parcel_no']
}

let n = 0
/** The feature id of the source test 2 patches to hectares 5 (planted 2024-04-01, certified). */
let patched = ''
function withAttributes (attributes: Record<string, unknown>) {
  n++
  const f = feature(`p-${n}`, { coordinates: square(-170 + (n % 300), -60 + Math.floor(n / 300)) }) as { properties: Record<string, unknown> }
  f.properties = { ...f.properties, ...attributes }
  return f
}
const post = async (headers: Record<string, string>, ...features: unknown[]) =>
  await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(...features) })
const putSchema = async (schema: unknown, headers: Record<string, string> = editorA.headers, organisation = 'acme') =>
  await app.inject({ method: 'PUT', url: `/organisations/${organisation}/attributes-schema`, headers, payload: schema as object })
const items = async (filter: string, headers: Record<string, string> = editorA.headers) =>
  await app.inject({ method: 'GET', url: `/collections/sources/items?limit=100&filter=${encodeURIComponent(filter)}`, headers })
const featureIds = (res: { json: () => { features: Array<{ properties: { feature_id: string } }> } }): string[] => res.json().features.map((f) => f.properties.feature_id).sort()

// Written before any schema: kept as they are.
const early = await post(editorA.headers, withAttributes({ parcel_no: 'bad', hectares: 'three' }), withAttributes({ parcel_no: 'NL-1', hectares: 1 }))
t.equal(early.statusCode, 201, early.body)
const earlyIds = early.json().sources.map((s: { id: string }) => s.id)

t.test('set by editors (admins: any), each change numbered; members read it; others 404', async (t) => {
  expectError(t, await app.inject({ method: 'GET', url: '/organisations/acme/attributes-schema', headers: editorA.headers }), 404, 'NOT_FOUND')
  expectError(t, await putSchema(SCHEMA, viewerA.headers), 403, 'FORBIDDEN')
  expectError(t, await putSchema(SCHEMA, editorB.headers), 404, 'NOT_FOUND')
  expectError(t, await putSchema({ type: 'array' }), 400, 'VALIDATION_FAILED')
  expectError(t, await putSchema({ properties: { version: { type: 'integer' } } }), 400, 'VALIDATION_FAILED')
  expectError(t, await putSchema({ properties: { x: { type: 'nonsense' } } }), 400, 'VALIDATION_FAILED')

  const first = await putSchema({ properties: { parcel_no: { type: 'string' } } })
  t.equal(first.statusCode, 200, first.body)
  t.equal(first.json().version, 1)
  t.equal(first.headers.etag, 'W/"1"')
  expectError(t, await app.inject({ method: 'PUT', url: '/organisations/acme/attributes-schema', headers: { ...editorA.headers, 'if-match': 'W/"7"' }, payload: SCHEMA }), 412, 'PRECONDITION_FAILED')
  const second = await app.inject({ method: 'PUT', url: '/organisations/acme/attributes-schema', headers: { ...editorA.headers, 'if-match': 'W/"1"' }, payload: SCHEMA })
  t.equal(second.statusCode, 200, second.body)
  t.equal(second.json().version, 2)
  t.same(second.json().declared.map((d: { name: string, type: string }) => `${d.name}:${d.type}`), ['parcel_no:string', 'hectares:number', 'planted:timestamp', 'certified:boolean'])

  const read = await app.inject({ method: 'GET', url: '/organisations/acme/attributes-schema', headers: viewerA.headers })
  t.equal(read.statusCode, 200)
  t.same(read.json().schema, SCHEMA)
  t.equal((await app.inject({ method: 'GET', url: '/organisations/acme/attributes-schema?version=1', headers: viewerA.headers })).json().version, 1)
  t.equal((await app.inject({ method: 'GET', url: '/organisations/acme/attributes-schema', headers: admin.headers })).statusCode, 200, 'admins read any')
  expectError(t, await app.inject({ method: 'GET', url: '/organisations/acme/attributes-schema', headers: editorB.headers }), 404, 'NOT_FOUND')
  const versions = (await app.inject({ method: 'GET', url: '/organisations/acme/attributes-schema/versions', headers: viewerA.headers })).json().versions
  t.same(versions.map((v: { version: number }) => v.version), [2, 1])
  t.match(versions[0].set_by, /@/)

  const adminSet = await putSchema({ properties: { zone: { type: 'string' } } }, admin.headers, 'other-org')
  t.equal(adminSet.statusCode, 200, adminSet.body)
})

t.test('writes after it must satisfy it: 422 with a pointer per violation (POST, PUT, PATCH)', async (t) => {
  const bad = await post(editorA.headers, withAttributes({ parcel_no: 'NL-2' }), withAttributes({ parcel_no: 'XX', hectares: -1, planted: '2024-02-30' }), withAttributes({ hectares: 2 }))
  const body = expectError(t, bad, 422, 'ATTRIBUTES_INVALID')
  t.same(body.details?.map((d) => d.pointer).sort(), ['/features/1/properties/hectares', '/features/1/properties/parcel_no', '/features/1/properties/planted', '/features/2/properties/parcel_no'])
  t.equal(body.details?.[0]?.feature_index, 1)

  const good = await post(editorA.headers, withAttributes({ parcel_no: 'NL-3', hectares: 3.5, planted: '2024-04-01', certified: true }))
  t.equal(good.statusCode, 201, good.body)
  patched = good.json().sources[0].feature_id
  const id = good.json().id
  const put = await app.inject({ method: 'PUT', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'if-match': 'W/"1"' }, payload: withAttributes({ hectares: 1 }) })
  t.equal(expectError(t, put, 422, 'ATTRIBUTES_INVALID').details?.[0]?.pointer, '/properties/parcel_no')
  const patch = (body: unknown, match = 'W/"1"') => app.inject({ method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'content-type': 'application/merge-patch+json', 'if-match': match }, payload: JSON.stringify(body) })
  t.equal(expectError(t, await patch({ properties: { parcel_no: null } }), 422, 'ATTRIBUTES_INVALID').details?.[0]?.pointer, '/properties/parcel_no', 'the merged result is checked')
  expectError(t, await patch({ properties: { hectares: 5 } }, 'W/"9"'), 412, 'PRECONDITION_FAILED')
  const ok = await patch({ properties: { hectares: 5 } }, '*')
  t.equal(ok.statusCode, 200, ok.body)
  t.equal(ok.json().properties.hectares, 5)
  // Another organisation's schema does not apply.
  t.equal((await post(editorB.headers, withAttributes({ anything: 1 }))).statusCode, 201)
})

t.test('declared attributes are typed queryables, in CQL2 and served by an index; undeclared ones are properties.name', async (t) => {
  const made = await post(editorA.headers,
    withAttributes({ parcel_no: 'NL-42', hectares: 2.5, planted: '2024-03-01', certified: true, land_use: 'forest', score: 7 }),
    withAttributes({ parcel_no: 'NL-43', hectares: 1, planted: '2023-06-01', certified: false, land_use: 'grazing', score: 2 }))
  t.equal(made.statusCode, 201, made.body)
  const [a, b] = made.json().sources.map((s: { feature_id: string }) => s.feature_id)

  const q = (await app.inject({ method: 'GET', url: '/collections/sources/queryables', headers: editorA.headers })).json()
  t.same(q.properties.hectares, { title: 'Hectares', description: 'The attribute hectares, declared by your organisation.', type: 'number' })
  t.same(q.properties.planted, { title: 'planted', description: 'The attribute planted, declared by your organisation.', type: 'string', format: 'date-time' })
  t.equal(q.properties.parcel_no.description, 'The cadastral parcel number.')
  t.notOk('owner' in q.properties, 'an object is not a queryable')
  t.notOk('hectares' in (await app.inject({ method: 'GET', url: '/collections/sources/queryables', headers: editorB.headers })).json().properties, 'only in the organisation\'s own view')
  const schemaDoc = (await app.inject({ method: 'GET', url: '/collections/sources/schema', headers: editorA.headers })).json()
  t.same(schemaDoc.properties.parcel_no, SCHEMA.properties.parcel_no)
  t.ok(schemaDoc.properties.area_m2)

  t.same(featureIds(await items("parcel_no = 'NL-42'")), [a])
  t.same(featureIds(await items('hectares > 2')), [a, patched].sort())
  t.same(featureIds(await items("planted BETWEEN DATE('2024-01-01') AND DATE('2024-12-31')")), [a, patched].sort())
  t.same(featureIds(await items('certified = FALSE')), [b])
  t.same(featureIds(await items("properties.land_use = 'grazing'")), [b])
  t.same(featureIds(await items('properties.score >= 5')), [a])
  t.same(featureIds(await items("properties.land_use LIKE 'for%'")), [a])
  t.same(featureIds(await items("properties.land_use IN ('forest', 'grazing') AND hectares < 2")), [b])
  t.ok(featureIds(await items('properties.nothing IS NULL')).includes(a))
  // Typed: a declared number against a string is refused with the fix; an early source's 'three' is no number.
  t.match(expectError(t, await items("hectares = '2'"), 400, 'VALIDATION_FAILED').message, /write the number without quotes/)
  t.notOk(featureIds(await items('hectares >= 0')).some((id) => id === 'p-1'), 'a string where a number is declared is no number')
  t.match(expectError(t, await items("nope = 'x'"), 400, 'VALIDATION_FAILED').message, /declared attributes parcel_no, hectares, planted, certified.*properties\.name/)
  t.match(expectError(t, await items('properties.a = properties.b'), 400, 'VALIDATION_FAILED').message, /literal/)
  // Other organisations see nothing of acme's through attributes.
  t.same(featureIds(await items("properties.land_use = 'forest'", editorB.headers)), [])

  const { rows } = await sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'sources' AND indexname LIKE 'sources\\_attribute\\_%'`.execute(db)
  t.same(rows.map((r) => r.name).sort(), ['sources_attribute_bool_certified', 'sources_attribute_numb_hectares', 'sources_attribute_stri_parcel_no', 'sources_attribute_time_planted', 'sources_attribute_stri_zone'].sort())
  // The planner can use it (seq scans off, as at scale): the filter's expression is the index's.
  const plan = await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL enable_seqscan = off`.execute(trx)
    return (await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT id FROM sources WHERE sources_attribute_number(sources.attributes, 'hectares') > 2`.execute(trx)).rows.map((r) => r['QUERY PLAN']).join('\n')
  })
  t.match(plan, /sources_attribute_numb_hectares/)
})

t.test('a typed view per organisation; the check lists the sources the schema refuses', async (t) => {
  const { rows } = await sql<{ parcel_no: string | null, hectares: number | null, planted: Date | null, certified: boolean | null }>`
    SELECT parcel_no, hectares, planted, certified FROM sources_attributes_acme WHERE parcel_no = 'NL-42'`.execute(db)
  t.equal(rows.length, 1)
  t.equal(rows[0]?.hectares, 2.5)
  t.equal(rows[0]?.planted?.toISOString(), '2024-03-01T00:00:00.000Z')
  t.equal(rows[0]?.certified, true)
  const comment = await sql<{ c: string }>`SELECT col_description('sources_attributes_acme'::regclass, (SELECT attnum FROM pg_attribute WHERE attrelid = 'sources_attributes_acme'::regclass AND attname = 'parcel_no')) AS c`.execute(db)
  t.match(comment.rows[0]?.c, /cadastral parcel number/)

  const check = await app.inject({ method: 'GET', url: '/organisations/acme/attributes-schema/check', headers: viewerA.headers })
  t.equal(check.statusCode, 200, check.body)
  t.same(check.json().sources.map((s: { id: string }) => s.id), [earlyIds[0]], 'the early source with parcel "bad" and hectares "three"')
  t.same(check.json().sources[0].problems.map((p: { pointer: string }) => p.pointer).sort(), ['/properties/hectares', '/properties/parcel_no'])
  t.equal(check.json().version, 2)
})

t.test('a declared date attribute\'s index builds when PostgreSQL builds it with parallel workers (server)', { skip: backend === 'embedded' ? 'PGlite has no parallel workers' : false }, async (t) => {
  // parallel_workers on the table makes CREATE INDEX use workers whatever its size; the date
  // function's EXCEPTION block was a subtransaction they cannot start (sql/functions/attributes.sql).
  await sql`ALTER TABLE sources SET (parallel_workers = 2)`.execute(db)
  t.teardown(async () => { await sql`ALTER TABLE sources RESET (parallel_workers)`.execute(db) })
  const headers = (await session(ctx, 'editor', 'parallel-org')).headers
  const res = await app.inject({ method: 'PUT', url: '/organisations/parallel-org/attributes-schema', headers, payload: { type: 'object', properties: { surveyed: { type: 'string', format: 'date' } } } })
  t.ok(res.statusCode === 200 || res.statusCode === 201, res.body)
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_indexes WHERE indexname = 'sources_attribute_time_surveyed'`.execute(db)
  t.equal(Number(rows[0]?.n), 1)
})
