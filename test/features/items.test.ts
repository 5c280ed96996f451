// OGC API – Features: landing page and conformance without a token; the collection's extent, its
// items filtered by bbox (across the antimeridian too) and datetime, keyset paging by cursor
// while others write, the scope of each role, and a 400 naming the parameter for every bad value.
import t from 'tap'
import { sql } from 'kysely'
import { Value } from '@sinclair/typebox/value'
import { SourceFeatureSchema } from '../../src/sources/source-feature.schema.js'
import { CollectionSchema, ConformanceSchema, LandingSchema } from '../../src/features/features.schema.js'
import { parseItemsQuery } from '../../src/features/features.query.js'
import { crsCatalogue } from '../../src/sources/crs.js'
import { propertiesWhere } from '../../src/sources/source-properties.js'
import { backend, build, collection, expectError, feature, followPages, session } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const viewerA = await session(ctx, 'viewer', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'hq')

const box = (w: number, s: number, size = 0.5) => [[[w, s], [w + size, s], [w + size, s + size], [w, s + size], [w, s]]]
// 30 sources of org-a on a 10 × 3 grid with starts in months 1-6, two at the antimeridian; 5 of org-b.
const features = Array.from({ length: 30 }, (_, i) => feature(`a-${i}`, {
  coordinates: box(i % 10, Math.floor(i / 10)), start: `2024-0${1 + (i % 6)}-01T00:00:00Z`, end: '2024-12-01T00:00:00Z'
}))
features.push(feature('east-edge', { coordinates: [[[179.5, 0], [180, 0], [180, 1], [179.5, 1], [179.5, 0]]] }))
features.push(feature('west-edge', { coordinates: [[[-180, 0], [-179.5, 0], [-179.5, 1], [-180, 1], [-180, 0]]] }))
const bFeatures = Array.from({ length: 5 }, (_, i) => feature(`b-${i}`, { coordinates: box(i, 0) }))
for (const [headers, fc] of [[editorA.headers, collection(...features)], [editorB.headers, collection(...bFeatures)]] as const) {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: fc })
  if (res.statusCode !== 201) throw new Error(`seeding: ${res.statusCode} ${res.body}`)
}

const get = (url: string, headers: Record<string, string> = editorA.headers) => app.inject({ method: 'GET', url, headers })
interface Page { features: Array<{ id: string, properties: { feature_id: string, organisation: string } }>, links: Array<{ rel: string, href: string }>, numberReturned: number, numberMatched?: number, timeStamp: string }

/** Follows next links from `url`, returning every feature id in order. */
const all = async (url: string, headers = editorA.headers): Promise<string[]> => (await followPages(app, url, headers)).map((f) => f.properties.feature_id as string)

t.test('landing page and conformance: no token, the links GIS clients need', async (t) => {
  const landing = await app.inject({ method: 'GET', url: '/', headers: { host: 'registry.example:8080' } })
  t.equal(landing.statusCode, 200)
  t.ok(Value.Check(LandingSchema, landing.json()))
  const rels = Object.fromEntries((landing.json() as { links: Array<{ rel: string, href: string, type: string }> }).links.map((l) => [l.rel, l]))
  t.match(rels, {
    self: { href: 'http://registry.example:8080/' },
    'service-desc': { href: 'http://registry.example:8080/openapi.json', type: 'application/vnd.oai.openapi+json;version=3.0' },
    conformance: { href: 'http://registry.example:8080/conformance' },
    data: { href: 'http://registry.example:8080/collections' }
  }, 'absolute links')
  const conformance = await app.inject({ method: 'GET', url: '/conformance' })
  t.ok(Value.Check(ConformanceSchema, conformance.json()))
  for (const c of ['core', 'geojson', 'oas30']) t.ok(conformance.json().conformsTo.includes(`http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/${c}`), c)
  const openapi = await app.inject({ method: 'GET', url: '/openapi.json' })
  t.match(openapi.headers["content-type"], /^application\/vnd\.oai\.openapi\+json; ?version="?3\.0/)
  const params = (openapi.json().paths['/collections/sources/items'].get.parameters as Array<{ name: string }>).map((p) => p.name).sort()
  const queryables = propertiesWhere((p) => p.queryable && p.type !== 'geometry').map(([name]) => name)
  t.same(params, ['bbox', 'bbox-crs', 'crs', 'cursor', 'datetime', 'f', 'filter', 'filter-crs', 'filter-lang', 'limit', 'organisation', 'properties', 'skipGeometry', 'sortby', ...queryables].sort(), 'the OpenAPI document names every parameter, each queryable\'s too')
})

t.test('collections need a token; the extent is of the caller\'s own sources', async (t) => {
  expectError(t, await app.inject({ method: 'GET', url: '/collections' }), 401, 'UNAUTHORIZED')
  const b = await get('/collections/sources', editorB.headers)
  t.ok(Value.Check(CollectionSchema, b.json()))
  t.same(b.json().extent.spatial.bbox, [[0, 0, 4.5, 0.5]], 'org-b sees the box of its 5 sources only')
  t.match(b.json().links, [{ rel: 'self' }, { rel: 'items', type: 'application/geo+json' }, { rel: 'describedBy', type: 'application/schema+json' }])
  const a = await get('/collections', viewerA.headers)
  t.same(a.json().collections[0].extent.spatial.bbox, [[-180, 0, 180, 2.5]])
  t.same(a.json().collections[0].extent.temporal.interval, [['2024-01-01T00:00:00Z', '2024-12-31T00:00:00Z']])
  const schema = await get('/collections/sources/schema')
  t.match(schema.headers['content-type'], /^application\/schema\+json/)
  t.match(schema.json().properties, { start_at: { type: 'string', format: 'date-time' }, area_m2: { type: 'number' } })
})

t.test('items: each feature is GET /sources/?id=\'s, with counts, links and timeStamp', async (t) => {
  const res = await get('/collections/sources/items?limit=5')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/geo\+json/)
  const page = res.json() as Page
  t.equal(page.numberReturned, 5)
  t.equal(page.numberMatched, 32)
  t.match(page.links.find((l) => l.rel === 'next')?.href, /^http:\/\/localhost(:\d+)?\/collections\/sources\/items\?limit=5&cursor=/)
  const second = (await get((page.links.find((l) => l.rel === 'next')?.href as string).replace(/^http:\/\/[^/]+/, ''))).json() as Page
  t.equal(second.numberReturned, 5)
  t.equal(second.numberMatched, undefined, 'counted on the first page only')
  const whole = (await get('/collections/sources/items?limit=100')).json() as Page
  t.same([whole.numberReturned, whole.numberMatched], [32, 32], 'a first page holding every match counts itself')
  const single = await get(`/sources/?id=${page.features[0]?.id as string}`)
  t.same(page.features[0], single.json(), 'the same Feature as GET /sources/?id=')
  t.ok(page.features.every((f) => Value.Check(SourceFeatureSchema, f)))
  const one = await get(`/collections/sources/items/${page.features[1]?.id as string}`)
  t.same(one.json(), page.features[1])
  expectError(t, await get('/collections/sources/items/src_0000000000000000000000'), 404, 'NOT_FOUND')
})

t.test('paging: every source exactly once, in any order, while others insert and delete', async (t) => {
  for (const sortby of ['id', '-id', 'start_at', '-created_at', 'end_at']) {
    const ids = await all(`/collections/sources/items?limit=7&sortby=${sortby}`)
    t.equal(ids.length, 32, sortby)
    t.equal(new Set(ids).size, 32, `${sortby}: no duplicates`)
  }
  // Page through while inserting and deleting: the rows that existed throughout appear once.
  const before = new Set(await all('/collections/sources/items?limit=100'))
  const seen: string[] = []
  let next: string | undefined = '/collections/sources/items?limit=4'
  let n = 0
  while (next !== undefined) {
    const page: Page = (await get(next.replace(/^http:\/\/[^/]+/, ''))).json()
    seen.push(...page.features.map((f) => f.properties.feature_id))
    await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(feature(`during-${n++}`, { coordinates: box(50 + n, 50) })) })
    next = page.links.find((l) => l.rel === 'next')?.href
  }
  const stable = [...before]
  t.same(stable.filter((id) => seen.filter((s) => s === id).length !== 1), [], 'each row that existed throughout was seen exactly once')
  await sql`DELETE FROM sources WHERE feature_id LIKE 'during-%'`.execute(db)
})

// A second app on the same database: the server backend only (an embedded directory has one owner).
t.test('a page read in several queries (ITEMS_ROWS_PER_QUERY=3) is the same page', { skip: backend === 'embedded' ? 'server backend only' : false }, async (t) => {
  const small = await build(t, { ITEMS_ROWS_PER_QUERY: 3 }, { url: ctx.url })
  for (const query of ['limit=7', 'limit=7&sortby=-start_at', 'limit=6', 'limit=1', 'limit=100&bbox=0,0,1.2,1.2']) {
    const a = (await get(`/collections/sources/items?${query}`)).json() as Page
    const b = (await small.app.inject({ method: 'GET', url: `/collections/sources/items?${query}`, headers: editorA.headers })).json() as Page
    t.same(b.features, a.features, `${query}: the same features`)
    t.same([b.numberReturned, b.links.find((l) => l.rel === 'next')?.href], [a.numberReturned, a.links.find((l) => l.rel === 'next')?.href], `${query}: the same next link`)
  }
})

t.test('beyond ITEMS_COUNT_MAX a first page has no numberMatched, and the same features', { skip: backend === 'embedded' ? 'server backend only' : false }, async (t) => {
  const capped = await build(t, { ITEMS_COUNT_MAX: 10 }, { url: ctx.url })
  for (const query of ['limit=5', 'limit=5&sortby=-start_at', 'limit=100&bbox=0,0,1.2,1.2']) {
    const a = (await get(`/collections/sources/items?${query}`)).json() as Page
    const b = (await capped.app.inject({ method: 'GET', url: `/collections/sources/items?${query}`, headers: editorA.headers })).json() as Page
    t.same(b.features, a.features, `${query}: the same features`)
    t.equal(b.numberMatched, a.numberMatched !== undefined && a.numberMatched <= 10 ? a.numberMatched : undefined, `${query}: counted only up to 10`)
  }
})

t.test('bbox (across the antimeridian too) and datetime match like the equivalent SQL', async (t) => {
  t.same((await all('/collections/sources/items?bbox=0,0,1.2,1.2')).sort(), ['a-0', 'a-1', 'a-10', 'a-11'])
  t.same((await all('/collections/sources/items?bbox=179.8,0.2,-179.8,0.8')).sort(), ['east-edge', 'west-edge'], 'minLon > maxLon crosses the antimeridian')
  t.same(await all('/collections/sources/items?bbox=170,0,179,1'), [])
  const sqlIds = async (where: ReturnType<typeof sql>) => (await sql<{ feature_id: string }>`SELECT feature_id FROM sources WHERE organisation = 'org-a' AND ${where} ORDER BY 1`.execute(db)).rows.map((r) => r.feature_id)
  t.same((await all('/collections/sources/items?datetime=2024-03-15T00:00:00Z')).sort(), await sqlIds(sql`period @> '2024-03-15T00:00:00Z'::timestamptz`), 'an instant')
  t.same((await all('/collections/sources/items?datetime=2024-02-01T00:00:00Z/2024-02-20T00:00:00Z')).sort(), await sqlIds(sql`period && tstzrange('2024-02-01Z', '2024-02-20Z', '[]')`), 'an interval')
  t.same((await all('/collections/sources/items?datetime=../2024-01-01T00:00:00Z')).sort(), await sqlIds(sql`period && tstzrange(NULL, '2024-01-01Z', '[]')`), 'open start')
  t.same((await all('/collections/sources/items?datetime=2024-12-01/..')).length, (await sqlIds(sql`period && tstzrange('2024-12-01Z', NULL, '[]')`)).length, 'open end')
  t.same(await all('/collections/sources/items?feature_id=a-7'), ['a-7'])
})

t.test('scope: viewers and editors see their organisation; admins all, or one', async (t) => {
  t.equal((await all('/collections/sources/items', viewerA.headers)).length, 32)
  t.same((await all('/collections/sources/items', editorB.headers)).sort(), ['b-0', 'b-1', 'b-2', 'b-3', 'b-4'])
  t.equal((await all('/collections/sources/items', admin.headers)).length, 37)
  t.equal((await all('/collections/sources/items?organisation=org-b', admin.headers)).length, 5)
  const bPage = (await get(`/collections/sources/items?feature_id=a-1`, editorB.headers)).json() as Page
  t.same([bPage.numberReturned, bPage.numberMatched], [0, 0], 'nothing of another organisation, not even a count')
  expectError(t, await get('/collections/sources/items?organisation=org-a', editorB.headers), 400, 'VALIDATION_FAILED')
})

t.test('every bad value is a 400 naming its parameter, never a 500; limits clamp; 406', async (t) => {
  const cases: Array<[string, string]> = [
    ['bbox=1,2,3', '?bbox'], ['bbox=1,2,3,4,5,6', '?bbox'], ['bbox=0,-91,1,1', '?bbox'], ['bbox=0,0,181,1', '?bbox'],
    ['bbox=a,b,c,d', '?bbox'], ['bbox=0x10,0,1,1', '?bbox'], ['bbox=NaN,0,1,1', '?bbox'], ['bbox=1e400,0,1,1', '?bbox'], ['bbox=0,2,1,1', '?bbox'], ['bbox=', '?bbox'],
    ['datetime=yesterday', '?datetime'], ['datetime=2024-13-01', '?datetime'], ['datetime=../..', '?datetime'], ['datetime=2024-02-01/2024-01-01', '?datetime'],
    ['datetime=a/b/c', '?datetime'], ['datetime=', '?datetime'], ['datetime=2024-01-01T10:00:00', '?datetime'],
    ['limit=0', '?limit'], ['limit=-1', '?limit'], ['limit=1.5', '?limit'], ['limit=1e3', '?limit'], ['limit=abc', '?limit'],
    ['sortby=', '?sortby'], ['sortby=geometry', '?sortby'], ['sortby=--id', '?sortby'],
    ['cursor=abc', '?cursor'], ['cursor=%00', '?cursor'], ['f=xml', '?f'], ['colour=red', '?colour'], ['limit=1&limit=2', '?limit'],
    // No PostgreSQL text holds U+0000: refused here, not by the database (which made it a 422).
    ['feature_id=%00', '?feature_id'], ['feature_id=a%00b', '?feature_id']
  ]
  for (const [query, pointer] of cases) {
    const res = await get(`/collections/sources/items?${query}`)
    t.equal(res.statusCode, 400, `${query}: ${res.body.slice(0, 160)}`)
    t.ok((res.json().details as Array<{ pointer: string }> | undefined)?.some((d) => d.pointer === pointer), `${query} names ${pointer}`)
  }
  // A cursor of another query, and a tampered one.
  const first = (await get('/collections/sources/items?limit=2')).json() as Page
  const cursor = new URL(first.links.find((l) => l.rel === 'next')?.href as string).searchParams.get('cursor') as string
  expectError(t, await get(`/collections/sources/items?limit=2&sortby=start_at&cursor=${cursor}`), 400, 'VALIDATION_FAILED')
  const tampered = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(cursor, 'base64url').toString()), v: 42 })).toString('base64url')
  expectError(t, await get(`/collections/sources/items?limit=2&cursor=${tampered}`), 400, 'VALIDATION_FAILED')
  // A cursor is not signed: its digest (of the filter and order) can be made by anyone. One made
  // by hand with a date that is no date is refused here; PostgreSQL refused it before, as a 422.
  const dated = (await get('/collections/sources/items?limit=2&sortby=start_at')).json() as Page
  const body = JSON.parse(Buffer.from(new URL(dated.links.find((l) => l.rel === 'next')?.href as string).searchParams.get('cursor') as string, 'base64url').toString())
  for (const v of ['2024-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '2024-13-45T25:61:61Z', '2024-01-01T24:00:00Z']) {
    const forged = Buffer.from(JSON.stringify({ ...body, v: [v] })).toString('base64url')
    const res = expectError(t, await get(`/collections/sources/items?limit=2&sortby=start_at&cursor=${forged}`), 400, 'VALIDATION_FAILED')
    t.equal(res.details?.[0]?.pointer, '?cursor', `${v}: names ?cursor`)
  }
  const wellForged = Buffer.from(JSON.stringify({ ...body, v: ['2024-01-01T00:00:00Z'] })).toString('base64url')
  t.equal((await get(`/collections/sources/items?limit=2&sortby=start_at&cursor=${wellForged}`)).statusCode, 200, 'a real date in a hand-made cursor is a position like any other')
  expectError(t, await get('/collections/sources/items?organisation=a%00', admin.headers), 400, 'VALIDATION_FAILED')
  const big = (await get('/collections/sources/items?limit=99999')).json() as Page
  t.equal(big.numberReturned, 32, 'a limit above 10,000 is lowered, not refused')
  t.equal(parseItemsQuery({ limit: '99999' }, false, crsCatalogue([])).parsed.limit, 10_000, 'lowered to 10,000, which the next link carries (limit=…)')
  t.match(((await get('/collections/sources/items?limit=1')).json() as Page).links.find((l) => l.rel === 'next')?.href, /[?&]limit=1&cursor=/)
  expectError(t, await get('/collections/sources/items', { ...editorA.headers, accept: 'image/png' }), 406, 'NOT_ACCEPTABLE')
  t.equal((await get('/collections/sources/items?limit=1', { ...editorA.headers, accept: 'application/geo+json' })).statusCode, 200)
  t.equal((await get('/collections/sources/items?limit=1&f=json', { ...editorA.headers, accept: 'text/html;q=0.9, */*;q=0.1' })).statusCode, 200)
  t.equal((await get('/collections/sources/items?limit=1', { ...editorA.headers, accept: 'text/html;q=0.1, application/json' })).statusCode, 200, 'JSON preferred by q-value is JSON')
  expectError(t, await get('/collections/sources/items', { ...editorA.headers, accept: 'application/json;q=0, image/png' }), 406, 'NOT_ACCEPTABLE')
  t.equal((await get('/collections/sources/items?limit=1', { ...editorA.headers, accept: 'application/*;q=0.2' })).statusCode, 200, 'a type wildcard')
})

t.test('bbox: the bounding-box shortcut lets in nothing the exact test would not', async (t) => {
  // Bounding boxes are float4 (7.6e-6° apart near 100°): a strip 1e-6° east of the query box has
  // a stored box inside the box's stored box. Only ST_Intersects may decide such sources.
  const editorC = await session(ctx, 'editor', 'org-c')
  const strip = (id: string, w: number, e: number) => feature(id, { coordinates: [[[w, 0], [e, 0], [e, 0.1], [w, 0.1], [w, 0]]] })
  const res = await app.inject({
    method: 'POST', url: '/sources', headers: editorC.headers,
    payload: collection(strip('outside', 100.000002, 100.000005), strip('inside', 99.9, 99.999999), strip('touching', 100, 100.1),
      feature('triangle', { coordinates: [[[100.00005, 0], [100.5, 0], [100.5, 0.5], [100.00005, 0]]] }))
  })
  t.equal(res.statusCode, 201)
  const cIds = async (url: string) => (await all(url, editorC.headers)).sort()
  t.same(await cIds('/collections/sources/items?bbox=99.5,0,100,0.1'), ['inside', 'touching'])
  t.same(await cIds('/collections/sources/items?bbox=99.5,0,100.000001,0.1'), ['inside', 'touching'], 'both stored boxes round to the same float4 edge; the strip is outside')
  t.same(await cIds('/collections/sources/items?bbox=99.5,0.3,100.1,0.6'), [], 'bounding boxes overlap, the triangle does not')
  let seed = 7
  const random = () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
  for (let i = 0; i < 40; i++) {
    const w = 99.9999 + random() * 0.0002; const e = w + random() * (i % 2 === 0 ? 0.5 : 0.0002); const s = random() * 0.3; const n = s + random() * 0.4
    const expected = (await sql<{ feature_id: string }>`SELECT feature_id FROM sources WHERE organisation = 'org-c' AND ST_Intersects(geom, ST_MakeEnvelope(${w}::float8, ${s}::float8, ${e}::float8, ${n}::float8, 4326)) ORDER BY 1`.execute(db)).rows.map((r) => r.feature_id)
    t.same(await cIds(`/collections/sources/items?bbox=${w},${s},${e},${n}`), expected, `bbox=${w},${s},${e},${n}`)
  }
})

t.test('text beyond ASCII arrives intact, its Content-Length in bytes: a page in one piece and one streamed', async (t) => {
  const editorU = await session(ctx, 'editor', 'org-u')
  const names = ['Zürich', '東京-区', 'carte-🗺', 'plain']
  const res = await app.inject({ method: 'POST', url: '/sources', headers: editorU.headers, payload: collection(...names.map((n, i) => feature(n, { coordinates: box(i, 20) }))) })
  t.equal(res.statusCode, 201)
  const oneByOne = backend === 'embedded' ? [] : [['streamed, one row per query', (await build(t, { ITEMS_ROWS_PER_QUERY: 1 }, { url: ctx.url })).app] as const]
  for (const [how, server] of [['in one piece', app] as const, ...oneByOne]) {
    const page = await server.inject({ method: 'GET', url: '/collections/sources/items?limit=10', headers: editorU.headers })
    t.equal(page.statusCode, 200, how)
    if (how === 'in one piece') t.equal(Number(page.headers['content-length']), page.rawPayload.length, `${how}: Content-Length is the byte length`)
    else t.equal(page.headers['content-length'], undefined, `${how}: no Content-Length`)
    t.same((page.json() as Page).features.map((f) => f.properties.feature_id).sort(), [...names].sort(), `${how}: every name as it was sent`)
  }
})
