// Issue 45: a source's attributes (every other member of the Feature's properties) are kept and
// returned by every read, replaced by PUT, merged by PATCH (RFC 7396), versioned, in events; the
// service's own properties are read-only; size, name and value rules refuse with pointers; fuzz.
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'kysely'
import { SourceFeatureSchema, VersionFeatureSchema } from '../../src/sources/source-feature.schema.js'
import { ATTRIBUTES_MAX_BYTES } from '../../src/sources/attributes.js'
import { RESERVED_NAMES } from '../../src/sources/source-properties.js'
import { build, collection, expectError, feature, session, square } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editorA = await session(ctx, 'editor', 'org-a')

const ATTRS = {
  parcel_no: 'NL-42',
  hectares: 2.5,
  planted: '2024-03-01',
  certified: true,
  steward: null,
  owner: { name: 'Acme', contact: { email: 'a@example.org' } },
  tags: ['forest', 'carbon', 3, false, null],
  'név / naam ~': 'ünïcødé ✓',
  reporting_year: 2024,
  big: 12345678901234567000,
  small: 1.5e-7
}

let n = 0
function withAttributes (attributes: Record<string, unknown>, x = 10 + (++n % 150), id = `attr-${n}`) {
  const f = feature(id, { coordinates: square(x, 10 + Math.floor(n / 150)) }) as { properties: Record<string, unknown> }
  f.properties = { ...f.properties, ...attributes }
  return f
}
async function create (attributes: Record<string, unknown> = ATTRS): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(withAttributes(attributes)) })
  t.equal(res.statusCode, 201, res.body)
  return res.json().id
}
const get = async (id: string, query = '') => await app.inject({ method: 'GET', url: `/sources/?id=${id}${query}`, headers: editorA.headers })
const attributesIn = (properties: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(properties).filter(([name]) => !RESERVED_NAMES.has(name)))
const patch = async (id: string, body: unknown, version: number) => await app.inject({
  method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'content-type': 'application/merge-patch+json', 'if-match': `W/"${version}"` }, payload: JSON.stringify(body)
})

t.test('attributes come back exactly from GET, items, as_of, versions and the events', async (t) => {
  const before = new Date().toISOString()
  const id = await create()
  const got = (await get(id)).json()
  t.ok(Value.Check(SourceFeatureSchema, got), 'schema')
  t.same(attributesIn(got.properties), ATTRS, 'GET')
  t.equal(got.properties.feature_id, `attr-${n}`)

  const items = await app.inject({ method: 'GET', url: `/collections/sources/items/${id}`, headers: editorA.headers })
  t.same(attributesIn(items.json().properties), ATTRS, 'OGC item')
  const list = await app.inject({ method: 'GET', url: `/collections/sources/items?id=${id}`, headers: editorA.headers })
  t.same(attributesIn(list.json().features[0].properties), ATTRS, 'items')

  const asOf = await get(id, `&as_of=${encodeURIComponent(new Date(Date.now() + 1000).toISOString())}`)
  t.same(attributesIn(asOf.json().properties), ATTRS, 'as_of')
  const versions = await app.inject({ method: 'GET', url: `/sources/versions?id=${id}`, headers: editorA.headers })
  const v1 = versions.json().versions[0].feature
  t.ok(Value.Check(VersionFeatureSchema, v1))
  t.same(attributesIn(v1.properties), ATTRS, 'versions')

  const { rows } = await sql<{ data: { attributes: unknown } }>`SELECT data FROM events WHERE subject = ${id} AND type = 'source.created'`.execute(db)
  t.same(rows[0]?.data.attributes, ATTRS, 'the source.created event carries them')
  t.ok(before)
})

t.test('a seed client that sends only start_at and end_at sees what it saw before', async (t) => {
  const id = await create({})
  const props = (await get(id)).json().properties
  t.same(Object.keys(props), ['feature_id', 'start_at', 'end_at', 'created_at', 'updated_at', 'version', 'organisation', 'area_m2', 'conflict', 'conflicts', 'conflict_state'])
})

t.test('the service\'s own properties are read-only: a Feature read back posts again as it is', async (t) => {
  const id = await create()
  const read = (await get(id)).json()
  // Posted again under another id (its conflicts, version, area… included): the same attributes, nothing more.
  const again = { ...read, id: 'round-trip', properties: { ...read.properties, version: 99, area_m2: 1, conflict: true, organisation: 'org-z', feature_id: 'ignored' } }
  const res = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(again) })
  t.equal(res.statusCode, 201, res.body)
  const copy = (await get(res.json().id)).json()
  t.same(attributesIn(copy.properties), ATTRS)
  t.equal(copy.properties.version, 1)
  t.equal(copy.properties.organisation, 'org-a')
  t.equal(copy.properties.feature_id, 'round-trip')
  const stored = await sql<{ attributes: Record<string, unknown> }>`SELECT attributes FROM sources WHERE id = ${res.json().id as string}`.execute(db)
  t.same(stored.rows[0]?.attributes, ATTRS, 'stored without the read-only members')

  // And PUT of what GET gave, changed in QGIS: the land use edited.
  const edited = { ...read, properties: { ...read.properties, parcel_no: 'NL-43' } }
  const put = await app.inject({ method: 'PUT', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'if-match': 'W/"1"' }, payload: edited })
  t.equal(put.statusCode, 200, put.body)
  t.same(attributesIn(put.json().properties), { ...ATTRS, parcel_no: 'NL-43' })
})

t.test('PUT replaces the attributes; PATCH merges them (RFC 7396, recursively); history records each', async (t) => {
  const id = await create()
  const put = await app.inject({ method: 'PUT', url: `/sources/?id=${id}`, headers: { ...editorA.headers, 'if-match': 'W/"1"' }, payload: withAttributes({ land_use: 'forest', owner: { name: 'Acme', since: 2020 } }, 30, 'replaced') })
  t.equal(put.statusCode, 200, put.body)
  t.same(attributesIn(put.json().properties), { land_use: 'forest', owner: { name: 'Acme', since: 2020 } }, 'PUT replaced them all')

  const merged = await patch(id, { properties: { land_use: 'grazing', owner: { since: null, contact: 'x' }, added: [1, 2] } }, 2)
  t.equal(merged.statusCode, 200, merged.body)
  t.same(attributesIn(merged.json().properties), { land_use: 'grazing', owner: { name: 'Acme', contact: 'x' }, added: [1, 2] })
  t.equal(merged.json().properties.end_at, put.json().properties.end_at, 'the period stays')

  const removed = await patch(id, { properties: { owner: null, added: null, version: 1234, area_m2: 0 } }, 3)
  t.equal(removed.statusCode, 200, removed.body)
  t.same(attributesIn(removed.json().properties), { land_use: 'grazing' }, 'null removes; read-only members are ignored')
  t.equal(removed.json().properties.version, 4)

  const versions = (await app.inject({ method: 'GET', url: `/sources/versions?id=${id}`, headers: editorA.headers })).json().versions
  t.same(versions.map((v: { feature: { properties: Record<string, unknown> } }) => attributesIn(v.feature.properties).land_use), ['grazing', 'grazing', 'forest', undefined], 'who changed the land use and when')
  const updated = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE subject = ${id} AND type = 'source.updated' AND data->'attributes'->>'land_use' = 'grazing'`.execute(db)
  t.equal(updated.rows[0]?.n, 2, 'source.updated events carry the attributes')
})

t.test('a change of attributes alone leaves the conflicts as they were', async (t) => {
  const a = await create({ k: 1 })
  const b = (await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(withAttributes({ k: 2 }, 10 + (n % 150), `overlap-${n}`)) })).json().id
  const started = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE type = 'conflict.started' AND subject IN (${a}, ${b})`.execute(db)
  const res = await patch(a, { properties: { k: 3 } }, 1)
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json().properties.conflicts.map((c: { id: string }) => c.id), [b])
  const after = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE type LIKE 'conflict.%' AND subject IN (${a}, ${b})`.execute(db)
  t.equal(after.rows[0]?.n, started.rows[0]?.n, 'no conflict event from an attribute change')
})

t.test('size: 413 with the pointer, at the limit stored; the SQL rule and the number agree', async (t) => {
  const fits = await sql<{ at: boolean, over: boolean }>`SELECT sources_attributes_fit(jsonb_build_object('a', repeat('x', ${ATTRIBUTES_MAX_BYTES - 9}::int))) AS at,
    sources_attributes_fit(jsonb_build_object('a', repeat('x', ${ATTRIBUTES_MAX_BYTES - 8}::int))) AS over`.execute(db)
  t.same(fits.rows[0], { at: true, over: false }, `{"a": "…"} is 9 bytes more than its string: ${ATTRIBUTES_MAX_BYTES} fits, one more does not`)

  const big = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(withAttributes({ a: 'x'.repeat(ATTRIBUTES_MAX_BYTES) })) })
  const body = expectError(t, big, 413, 'ATTRIBUTES_TOO_LARGE')
  t.equal(body.details?.[0]?.pointer, '/features/0/properties')
  t.not(big.headers.connection, 'close', 'the body was read: the connection stays')

  // Compact JSON within the limit, PostgreSQL's text (a space after each ':' and ',') beyond it: the database's rule refuses it, explained.
  const many = Object.fromEntries(Array.from({ length: 1400 }, (_, i) => [`k${i}`, i]))
  t.ok(Buffer.byteLength(JSON.stringify(many)) < ATTRIBUTES_MAX_BYTES)
  const spaced = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(withAttributes({ ok: 1 }), withAttributes(many)) })
  const spacedBody = expectError(t, spaced, 413, 'ATTRIBUTES_TOO_LARGE')
  t.equal(spacedBody.details?.[0]?.pointer, '/features/1/properties')
  t.match(spacedBody.details?.[0]?.message, /PostgreSQL/)

  // A PATCH that makes the merged attributes too large.
  const id = await create({ a: 'x'.repeat(ATTRIBUTES_MAX_BYTES - 100) })
  const grown = await patch(id, { properties: { b: 'y'.repeat(200) } }, 1)
  const grownBody = expectError(t, grown, 413, 'ATTRIBUTES_TOO_LARGE')
  t.equal(grownBody.details?.[0]?.pointer, '/properties')
  t.equal((await get(id)).json().properties.version, 1, 'nothing changed')
})

t.test('names and values a column or jsonb cannot hold: 400 with pointers; fuzz never 500', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['{"": 1}', '/features/0/properties/', 'name'],
    [`{"${'n'.repeat(257)}": 1}`, `/features/0/properties/${'n'.repeat(257)}`, 'name'],
    ['{" padded": 1}', '/features/0/properties/ padded', 'name'],
    ['{"tab\\there": 1}', '/features/0/properties/tab\there', 'name'],
    ['{"nul": "a\\u0000b"}', '/features/0/properties/nul', 'U+0000'],
    ['{"deep": {"x\\u0000": 1}}', '/features/0/properties/deep/x\u0000', 'U+0000'],
    ['{"huge": 1e400}', '/features/0/properties/huge', 'out of range'],
    ['{"neg": [-1e400]}', '/features/0/properties/neg/0', 'out of range'],
    [`{"deep": ${'['.repeat(40)}1${']'.repeat(40)}}`, '/features/0/properties/deep' + '/0'.repeat(31), 'nests deeper']
  ]
  for (const [members, pointer, says] of cases) {
    const fc = JSON.stringify(collection(feature('fuzz', { coordinates: square(100, 10) }))).replace('"end_at":"2024-12-31T00:00:00Z"', `"end_at":"2024-12-31T00:00:00Z",${members.slice(1, -1)}`)
    const res = await app.inject({ method: 'POST', url: '/sources', headers: { ...editorA.headers, 'content-type': 'application/json' }, payload: fc })
    const body = expectError(t, res, 400, 'INVALID_GEOJSON')
    t.equal(body.details?.[0]?.pointer, pointer, members.slice(0, 40))
    t.match(body.details?.[0]?.message, says)
  }
  // Odd but storable: -0, very small and large numbers, escapes, 10,000 keys nested deep enough (refused by size), deep nesting at the limit.
  const odd = { zero: -0, tiny: 5e-324, max: 1.7976931348623157e308, esc: '"\\\n\u2028', deep: JSON.parse(`${'['.repeat(30)}1${']'.repeat(30)}`) }
  const id = await create(odd)
  const got = attributesIn((await get(id)).json().properties)
  t.same(got, { ...odd, zero: 0 }, 'JSON has no -0: stored as 0')
  const tenThousand = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`key_${i}`, i]))
  expectError(t, await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(withAttributes(tenThousand)) }), 413, 'ATTRIBUTES_TOO_LARGE')
  // PATCH of bad members: 400 with pointers relative to the patch.
  const bad = await patch(id, { properties: { x: 'a\u0000', '': 1 } }, 1)
  const badBody = expectError(t, bad, 400, 'INVALID_GEOJSON')
  t.same(badBody.details?.map((d) => d.pointer).sort(), ['/properties/', '/properties/x'])
})
