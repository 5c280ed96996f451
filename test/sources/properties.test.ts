// The property registry (src/sources/source-properties.ts) is the one definition of a source's
// properties: every consumer agrees with it. Enumerated here, so a property added to the
// registry must appear in GET, the items, versions, the schema and queryables documents, CQL2
// filters, sortby and tiles, and one removed must disappear from all of them.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { sql } from 'kysely'
import { type SourceProperty, TILE_PROPERTIES, propertiesTable, propertiesWhere, sourceRow, valueOf } from '../../src/sources/source-properties.js'
import { build, collection, feature, session, square } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-a')
const get = (url: string) => app.inject({ method: 'GET', url, headers: editor.headers })

// Two sources that conflict, so that conflict is true on both, then a change: version 2.
const created = await app.inject({
  method: 'POST', url: '/sources', headers: editor.headers,
  payload: collection(feature('props-1', { coordinates: square(20, 40, 1) }), feature('props-2', { coordinates: square(20.5, 40, 1) }))
})
if (created.statusCode !== 201) throw new Error(`seeding: ${created.statusCode} ${created.body}`)
const id = (created.json() as { sources: Array<{ id: string }> }).sources[0]?.id as string
const patched = await app.inject({
  method: 'PATCH', url: `/sources/?id=${id}`, headers: { ...editor.headers, 'content-type': 'application/merge-patch+json', 'if-match': 'W/"1"' },
  payload: { properties: { end_at: '2025-01-01T00:00:00Z' } }
})
if (patched.statusCode !== 200) throw new Error(`patching: ${patched.statusCode} ${patched.body}`)

type Feature = { id: string, properties: Record<string, unknown> }
const names = (test: (p: SourceProperty) => boolean) => propertiesWhere(test).map(([name]) => name).sort()
const returned = names((p) => p.returned === 'always')
const sorted = (o: object) => Object.keys(o).sort()

const single = (await get(`/sources/?id=${id}`)).json() as Feature

t.test('GET, items and the write answers carry exactly the returned properties, in the registry\'s order', async (t) => {
  t.same(sorted(single.properties), returned)
  const order = propertiesWhere((p) => p.returned === 'always').map(([name]) => name)
  t.same(Object.keys(single.properties), order, 'in the order of the registry')
  const items = (await get('/collections/sources/items?limit=10')).json() as { features: Feature[] }
  const listed = items.features.find((f) => f.id === id)
  t.same(listed, single, 'an item is exactly the GET of the source')
  t.same(patched.json(), single, 'a change answers the source as GET does')
  const item = (await get(`/collections/sources/items/${id}`)).json() as Feature
  t.same(item, single)
})

t.test('versions and as_of carry the versioned properties', async (t) => {
  const versioned = names((p) => p.returned === 'always' && p.versioned)
  const page = (await get(`/sources/versions?id=${id}`)).json() as { versions: Array<{ feature: Feature }> }
  t.equal(page.versions.length, 2)
  for (const v of page.versions) t.same(sorted(v.feature.properties), versioned)
  const asOf = (await get(`/sources/?id=${id}&as_of=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).json() as Feature
  t.same(sorted(asOf.properties), versioned)
  for (const name of versioned) t.same(asOf.properties[name], single.properties[name], `as_of now: ${name} as GET has it`)
})

t.test('each value is its SQL expression on the stored row', async (t) => {
  const row = sourceRow('s')
  for (const [name, p] of propertiesWhere((p) => p.returned === 'always' && p.value !== undefined && p.type !== 'timestamp')) {
    const { rows } = await sql<{ v: unknown }>`SELECT ${valueOf(name, row)} AS v FROM sources AS s WHERE s.id = ${id}`.execute(db)
    const v = rows[0]?.v
    t.same(p.type === 'integer' || p.type === 'number' ? Number(v) : v, single.properties[name], name)
  }
})

t.test('the schema and queryables documents list the registry\'s properties', async (t) => {
  const schema = (await get('/collections/sources/schema')).json() as { properties: object }
  t.same(sorted(schema.properties), names((p) => p.returned !== false))
  const queryables = (await get('/collections/sources/queryables')).json() as { properties: object }
  t.same(sorted(queryables.properties), names((p) => p.queryable))
})

t.test('every queryable filters, with a literal of its type', async (t) => {
  for (const [name, p] of propertiesWhere((p) => p.queryable)) {
    const value = name === 'id' ? id : single.properties[name]
    const literal = p.type === 'geometry'
      ? 'S_INTERSECTS(geometry, BBOX(20.1, 40.1, 20.2, 40.2))'
      : p.type === 'timestamp' ? `${name} = TIMESTAMP('${String(value)}')`
        : p.type === 'string' ? `${name} = '${String(value)}'`
          : `${name} = ${String(value).toUpperCase()}`
    const res = await get(`/collections/sources/items?filter=${encodeURIComponent(literal)}`)
    t.equal(res.statusCode, 200, literal)
    t.ok((res.json() as { features: Feature[] }).features.some((f) => f.id === id), `${literal} finds the source`)
  }
  const unknown = await get(`/collections/sources/items?filter=${encodeURIComponent("organisation = 'org-a'")}`)
  t.equal(unknown.statusCode, 400, 'a property that is not queryable is refused')
})

t.test('every queryable but the geometry is a query parameter: equality, alone and with filter=', async (t) => {
  const conformance = (await get('/conformance')).json() as { conformsTo: string[] }
  t.ok(conformance.conformsTo.includes('http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables-query-parameters'))
  const others = new Set(((await get('/collections/sources/items?limit=100')).json() as { features: Feature[] }).features.map((f) => f.id))
  for (const [name, p] of propertiesWhere((p) => p.queryable && p.type !== 'geometry')) {
    const value = String(name === 'id' ? id : single.properties[name])
    const found = await get(`/collections/sources/items?${name}=${encodeURIComponent(value)}`)
    t.equal(found.statusCode, 200, `${name}=${value}`)
    const ids = (found.json() as { features: Feature[] }).features.map((f) => f.id)
    t.ok(ids.includes(id), `?${name}= finds the source`)
    t.ok(ids.every((i) => others.has(i)), 'and only sources of the scope')
    const both = await get(`/collections/sources/items?${name}=${encodeURIComponent(value)}&filter=${encodeURIComponent(`id <> '${id}'`)}`)
    t.notOk((both.json() as { features: Feature[] }).features.some((f) => f.id === id), `?${name}= AND filter=`)
    if (p.type !== 'string') {
      const bad = await get(`/collections/sources/items?${name}=not-a-${p.type}`)
      t.equal(bad.statusCode, 400, `?${name}= of another type is a 400`)
      t.match(bad.json(), { details: [{ pointer: `?${name}` }] })
    }
  }
  const end = String(single.properties.end_at)
  const interval = (await get(`/collections/sources/items?end_at=${encodeURIComponent(`${end}/..`)}&start_at=${encodeURIComponent(`../${end}`)}`)).json() as { features: Feature[] }
  t.ok(interval.features.some((f) => f.id === id), 'a timestamp queryable takes an interval too')
  const after = (await get(`/collections/sources/items?end_at=${encodeURIComponent(`${new Date(Date.parse(end) + 1000).toISOString()}/..`)}`)).json() as { features: Feature[] }
  t.notOk(after.features.some((f) => f.id === id), 'an interval after it does not find it')
})

t.test('every sortable property sorts, both ways; no other does', async (t) => {
  for (const name of names((p) => p.sortable)) {
    for (const sortby of [name, `-${name}`]) t.equal((await get(`/collections/sources/items?sortby=${sortby}`)).statusCode, 200, sortby)
  }
  for (const name of names((p) => !p.sortable)) t.equal((await get(`/collections/sources/items?sortby=${name}`)).statusCode, 400, `${name} is not sortable`)
})

t.test('tiles carry the tile properties and count', async (t) => {
  const tilejson = (await get('/collections/sources/tiles/WebMercatorQuad/tilejson.json')).json() as { vector_layers: Array<{ fields: object }> }
  t.same(sorted(tilejson.vector_layers[0]?.fields ?? {}), [...TILE_PROPERTIES.map((p) => p.name), 'count'].sort())
})

t.test('docs/api.md holds the table of the registry (npm run docs:tables)', async (t) => {
  const api = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8')
  t.ok(api.includes(`<!-- properties:begin -->\n${propertiesTable()}\n<!-- properties:end -->`), 'the generated table, as it is')
})
