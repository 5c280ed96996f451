// sortby (a comma list of sortables, + and -) with keyset paging stable across ties, the
// sortables and returnables documents, properties= and skipGeometry, and unknown names refused
// with a 400 that names them.
import t from 'tap'
import { sql } from 'kysely'
import { SORTABLE, RETURNABLE } from '../../src/sources/source-properties.js'
import { build, collection, expectError, feature, followPages, session } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-sort')

// 13 sources: 3 distinct starts and 2 distinct ends, so that every order has many ties.
const features = Array.from({ length: 13 }, (_, i) => feature(`s-${String(i).padStart(2, '0')}`, {
  coordinates: [[[i, 0], [i + 0.5, 0], [i + 0.5, 0.5], [i, 0.5], [i, 0]]],
  start: `2024-0${1 + (i % 3)}-01T00:00:00Z`,
  end: `2024-1${i % 2}-01T00:00:00Z`
}))
const seeded = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(...features) })
if (seeded.statusCode !== 201) throw new Error(seeded.body)

const get = (url: string) => app.inject({ method: 'GET', url, headers: editor.headers })
interface Page { features: Array<{ id: string, geometry: unknown, properties: Record<string, unknown> }>, links: Array<{ rel: string, href: string }> }

/** Every id, following next links with pages of `limit`. */
const paged = async (query: string, limit: number): Promise<string[]> => (await followPages(app, `/collections/sources/items?limit=${limit}&${query}`, editor.headers, 50)).map((f) => f.id)

/** The ids in the order PostgreSQL gives for this ORDER BY. */
const sqlOrder = async (orderBy: string) => (await sql<{ id: string }>`SELECT id FROM sources WHERE organisation = 'org-sort' ORDER BY ${sql.raw(orderBy)}`.execute(db)).rows.map((r) => r.id)

t.test('sortby: comma lists, + and -, pages of 2 and 5 across ties, the order PostgreSQL gives', async (t) => {
  const cases: Array<[string, string]> = [
    ['sortby=start_at', 'lower(period), id'],
    ['sortby=-start_at', 'lower(period) DESC, id DESC'],
    ['sortby=start_at,-end_at', 'lower(period), upper(period) DESC, id DESC'],
    ['sortby=-start_at,%2Bend_at', 'lower(period) DESC, upper(period), id'],
    ['sortby=end_at,start_at,-id', 'upper(period), lower(period), id DESC'],
    ['sortby=-created_at,start_at', 'created_at DESC, lower(period), id'],
    ['sortby=-id,start_at', 'id DESC']
  ]
  for (const [query, orderBy] of cases) {
    const expected = await sqlOrder(orderBy)
    t.equal(expected.length, 13)
    for (const limit of [2, 5]) t.same(await paged(query, limit), expected, `${query}, pages of ${limit}`)
  }
  for (const name of SORTABLE) t.same(await paged(`sortby=-${name}`, 4), await sqlOrder(name === 'id' ? 'id DESC' : `${name === 'start_at' ? 'lower(period)' : name === 'end_at' ? 'upper(period)' : name} DESC, id DESC`), `every sortable: -${name}`)
  const first = (await get('/collections/sources/items?limit=2&sortby=start_at')).json() as Page
  const cursor = new URL(first.links.find((l) => l.rel === 'next')?.href ?? '').searchParams.get('cursor') ?? ''
  expectError(t, await get(`/collections/sources/items?limit=2&sortby=start_at,end_at&cursor=${cursor}`), 400, 'VALIDATION_FAILED')
})

t.test('sortables and returnables documents', async (t) => {
  const sortables = await get('/collections/sources/sortables')
  t.equal(sortables.statusCode, 200)
  t.same(Object.keys((sortables.json() as { properties: object }).properties), SORTABLE)
  const returnables = await get('/collections/sources/returnables')
  t.same(Object.keys((returnables.json() as { properties: object }).properties), RETURNABLE)
  const links = ((await get('/collections/sources')).json() as { links: Array<{ rel: string }> }).links.map((l) => l.rel)
  t.ok(links.includes('http://www.opengis.net/def/rel/ogc/1.0/sortables') && links.includes('http://www.opengis.net/def/rel/ogc/1.0/returnables'))
})

t.test('properties= and skipGeometry', async (t) => {
  const chosen = (await get('/collections/sources/items?limit=3&properties=start_at,feature_id')).json() as Page
  t.same(Object.keys(chosen.features[0]?.properties ?? {}), ['feature_id', 'start_at'], 'only those, in the registry\'s order')
  t.match(chosen.features[0]?.geometry, { type: 'Polygon' }, 'the geometry is kept')
  const none = (await get('/collections/sources/items?limit=3&properties=conflicts_total&skipGeometry=true')).json() as Page
  t.same(none.features[0]?.properties, {}, 'an optional property absent: no properties')
  t.equal(none.features[0]?.geometry, null, 'skipGeometry=true: geometry null')
  t.same(await paged('properties=version&sortby=-start_at&skipGeometry=true', 4), await sqlOrder('lower(period) DESC, id DESC'), 'paging with chosen properties')
  const one = (await get('/collections/sources/items?limit=1&properties=area_m2,conflict&crs=EPSG:3857')).json() as Page
  t.same(Object.keys(one.features[0]?.properties ?? {}), ['area_m2', 'conflict'])
})

t.test('unknown names: 400 naming them', async (t) => {
  const sortby = expectError(t, await get('/collections/sources/items?sortby=start_at,-nope,area'), 400, 'VALIDATION_FAILED')
  t.equal(sortby.details?.[0]?.pointer, '?sortby')
  t.match(sortby.details?.[0]?.message, /"nope", "area" are not sortable/)
  const properties = expectError(t, await get('/collections/sources/items?properties=feature_id,colour'), 400, 'VALIDATION_FAILED')
  t.equal(properties.details?.[0]?.pointer, '?properties')
  t.match(properties.details?.[0]?.message, /"colour" is not returnable/)
  expectError(t, await get('/collections/sources/items?skipGeometry=yes'), 400, 'VALIDATION_FAILED')
  expectError(t, await get('/collections/sources/items?sortby=start_at,start_at'), 400, 'VALIDATION_FAILED')
})
