// The conflicts as an OGC collection (issue 47, point 1): listed in /collections beside the
// sources, described at /collections/conflicts, its queryables, and a CQL2 filter (text and
// JSON) on /collections/conflicts/items over the properties and the overlap; unknown names 400.
import t from 'tap'
import { build, collection, expectError, feature, session } from '../helper.js'

const ctx = await build(t)
const { app } = ctx
const a = await session(ctx, 'editor', 'org-a')
const b = await session(ctx, 'editor', 'org-b')
const c = await session(ctx, 'editor', 'org-c')

type Headers = Record<string, string>
const box = (x: number, y: number, w: number, h: number): number[][][] => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]

async function create (headers: Headers, coordinates: number[][][], year = 2024): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(feature(`f-${Math.random()}`, { coordinates, start: `${year}-01-01T00:00:00Z`, end: `${year}-12-31T00:00:00Z` })) })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().sources[0].id
}
async function items (headers: Headers, query: Record<string, string>) {
  return await app.inject({ method: 'GET', url: '/collections/conflicts/items', query, headers })
}
const ids = (res: { json: () => { features: Array<{ id: string }> } }): string[] => res.json().features.map((f) => f.id).sort()

// Two conflicts of a with b: a small one (0.01° square) near 70°E and a larger one near 71°E; one of b with c.
const a1 = await create(a.headers, box(70, 10, 0.1, 0.1))
const b1 = await create(b.headers, box(70.09, 10.09, 0.1, 0.1))
const a2 = await create(a.headers, box(71, 10, 0.1, 0.1), 2025)
await create(b.headers, box(71.05, 10, 0.1, 0.1), 2025)
const c1 = await create(c.headers, box(72, 10, 0.1, 0.1))
await create(b.headers, box(72.05, 10, 0.1, 0.1))
const mine = (await app.inject({ method: 'GET', url: '/conflicts', headers: a.headers })).json().features as Array<{ id: string, properties: { parties: Array<{ source_id: string }>, overlap_m2: number } }>
const small = mine.find((f) => f.properties.parties.some((p) => p.source_id === a1)) as typeof mine[number]
const large = mine.find((f) => f.properties.parties.some((p) => p.source_id === a2)) as typeof mine[number]

t.test('the collection is listed and described', async (t) => {
  const all = await app.inject({ method: 'GET', url: '/collections', headers: a.headers })
  t.equal(all.statusCode, 200, all.body)
  t.same(all.json().collections.map((x: { id: string }) => x.id), ['sources', 'conflicts'])
  const doc = all.json().collections[1]
  t.same(doc.crs, ['http://www.opengis.net/def/crs/OGC/1.3/CRS84'])
  t.ok(doc.links.some((l: { rel: string, href: string }) => l.rel === 'items' && l.href.endsWith('/collections/conflicts/items')))
  t.ok(doc.links.some((l: { rel: string, href: string }) => l.rel.endsWith('/queryables') && l.href.endsWith('/collections/conflicts/queryables')))
  const one = await app.inject({ method: 'GET', url: '/collections/conflicts', headers: a.headers })
  t.equal(one.statusCode, 200)
  t.same(one.json(), doc)
  t.equal((await app.inject({ method: 'GET', url: '/collections/conflicts' })).statusCode, 401)
})

t.test('the queryables', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/collections/conflicts/queryables', headers: a.headers })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /application\/schema\+json/)
  t.same(Object.keys(res.json().properties).sort(), ['geometry', 'overlap_end', 'overlap_m2', 'overlap_start', 'resolution', 'resolved_at', 'source_a', 'source_b', 'started_at', 'state', 'updated_at', 'version'])
  t.match(res.json().$id, /\/collections\/conflicts\/queryables$/)
})

t.test('a filter in CQL2 text', async (t) => {
  t.same(ids(await items(a.headers, { filter: `overlap_m2 < ${(small.properties.overlap_m2 + large.properties.overlap_m2) / 2}` })), [small.id], 'by area')
  t.same(ids(await items(a.headers, { filter: `source_a = '${[a1, b1].sort()[0] as string}' OR source_b = '${[a1, b1].sort()[0] as string}'` })), [small.id], 'by a source id')
  t.same(ids(await items(a.headers, { filter: "state = 'open'" })), [large.id, small.id].sort(), 'by state')
  t.same(ids(await items(a.headers, { filter: "state = 'disputed'" })), [], 'none disputed')
  t.same(ids(await items(a.headers, { filter: "T_AFTER(overlap_start, TIMESTAMP('2024-06-01T00:00:00Z'))" })), [large.id], 'by the overlap\'s start')
  t.same(ids(await items(a.headers, { filter: "T_INTERSECTS(INTERVAL(overlap_start, overlap_end), INTERVAL('2024-02-01', '2024-03-01'))" })), [small.id], 'by the overlapping period')
  t.same(ids(await items(a.headers, { filter: 'S_INTERSECTS(geometry, BBOX(70.5, 9, 71.5, 11))' })), [large.id], 'by the overlap against a box')
  t.same(ids(await items(a.headers, { filter: 'S_INTERSECTS(geometry, POINT(70.095 10.095))' })), [small.id], 'by the overlap against a point')
  t.same(ids(await items(a.headers, { filter: 'S_INTERSECTS(geometry, POINT(70.05 10.05))' })), [], 'a point of a\'s source outside the overlap')
  t.same(ids(await items(a.headers, { filter: 'started_at IS NOT NULL AND resolved_at IS NULL' })), [large.id, small.id].sort())
  t.same(ids(await items(c.headers, { filter: 'overlap_m2 > 0' })).length, 1, 'c sees its own conflict only')
  t.same(ids(await items(c.headers, { filter: `source_a = '${a1}' OR source_b = '${a1}'` })), [], 'and not a\'s by naming its source')
  t.ok(c1)
  // The same filter on /conflicts.
  const plain = await app.inject({ method: 'GET', url: '/conflicts', query: { filter: "state = 'open' AND overlap_m2 > 0" }, headers: a.headers })
  t.same(ids(plain), [large.id, small.id].sort())
})

t.test('a filter in CQL2 JSON', async (t) => {
  const filter = JSON.stringify({ op: 'and', args: [{ op: '=', args: [{ property: 'state' }, 'open'] }, { op: 's_intersects', args: [{ property: 'geometry' }, { bbox: [69.5, 9, 70.5, 11] }] }] })
  t.same(ids(await items(a.headers, { filter, 'filter-lang': 'cql2-json' })), [small.id])
})

t.test('a stance change is seen by the filter; resolved ones only with state=', async (t) => {
  const etag = (await app.inject({ method: 'GET', url: `/conflicts/${large.id}`, headers: a.headers })).headers.etag as string
  const res = await app.inject({ method: 'POST', url: `/conflicts/${large.id}/stance`, headers: { ...a.headers, 'if-match': etag }, payload: { stance: 'acknowledged' } })
  t.equal(res.statusCode, 200, res.body)
  t.same(ids(await items(a.headers, { filter: "state = 'in_review'" })), [large.id])
  t.same(ids(await items(a.headers, { filter: 'version > 1' })), [large.id])
  t.same(ids(await items(a.headers, { filter: "resolution = 'deleted'" })), [], 'unresolved only by default')
})

t.test('bad filters: 400 naming what is wrong', async (t) => {
  const unknown = await items(a.headers, { filter: "organisation = 'org-b'" })
  expectError(t, unknown, 400, 'VALIDATION_FAILED')
  t.match(unknown.json().details[0], { pointer: '?filter', message: /unknown property "organisation": the queryables are state, overlap_m2/ })
  t.match((await items(a.headers, { filter: "properties.x = 'y'" })).json().details[0].message, /unknown property "properties.x"/, 'no attributes here')
  t.match((await items(a.headers, { filter: 'area_m2 > 5' })).json().details[0].message, /unknown property "area_m2"/, 'a source\'s property is not a conflict\'s')
  expectError(t, await items(a.headers, { filter: 'state = ' }), 400, 'VALIDATION_FAILED')
  expectError(t, await items(a.headers, { filter: '{"op":"=","args":[{"property":"nope"},1]}', 'filter-lang': 'cql2-json' }), 400, 'VALIDATION_FAILED')
  expectError(t, await items(a.headers, { filter: 'overlap_m2 = 1', 'filter-crs': 'http://www.opengis.net/def/crs/EPSG/0/3857' }), 400, 'VALIDATION_FAILED')
  const bow = await items(a.headers, { filter: 'S_INTERSECTS(geometry, POLYGON((70 10, 71 11, 71 10, 70 11, 70 10)))' })
  expectError(t, bow, 400, 'VALIDATION_FAILED')
  t.match(bow.json().details[0].message, /not valid/)
  t.match((await items(a.headers, { filter: "T_DURING(started_at, INTERVAL('2024-01-01', '2024-02-01'))" })).json().details[0].message, /INTERVAL\(overlap_start, overlap_end\)/, 'the hint names the conflicts\' period')
})
