// sortby and properties= on an organisation's declared attributes (issues 45 and 48): the order
// PostgreSQL gives for the attribute's own expression (the one its index holds), sources without
// the attribute last ascending and first descending, keyset pages across ties and NULLs, the
// sortables and returnables documents, and another organisation's names refused.
import t from 'tap'
import { sql } from 'kysely'
import { build, collection, expectError, feature, followPages, session, square } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-attr-sort')
const other = await session(ctx, 'editor', 'org-attr-other')

const schema = {
  type: 'object',
  properties: {
    hectares: { type: 'number', description: 'The area in hectares, as surveyed.' },
    parcel_no: { type: 'string' },
    planted: { type: 'string', format: 'date' },
    organic: { type: 'boolean' }
  }
}
const put = await app.inject({ method: 'PUT', url: '/organisations/org-attr-sort/attributes-schema', headers: editor.headers, payload: schema })
if (put.statusCode !== 200 && put.statusCode !== 201) throw new Error(put.body)

// 14 sources: hectares with ties and two without it; parcel numbers with ties; dates.
const features = Array.from({ length: 14 }, (_, i) => {
  const f = feature(`a-${String(i).padStart(2, '0')}`, { coordinates: square(i, 10) }) as { properties: Record<string, unknown> }
  const attributes: Record<string, unknown> = { parcel_no: `NL-${i % 4}`, planted: `2024-0${1 + (i % 5)}-15`, organic: i % 2 === 0 }
  if (i % 5 !== 4) attributes.hectares = [2.5, 0.75, 10, 2.5, -1][i % 5]
  f.properties = { ...f.properties, ...attributes, note: `undeclared ${i}` }
  return f
})
const seeded = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(...features) })
if (seeded.statusCode !== 201) throw new Error(seeded.body)

const get = (url: string, headers = editor.headers) => app.inject({ method: 'GET', url, headers })
interface Page { features: Array<{ id: string, geometry: unknown, properties: Record<string, unknown> }>, links: Array<{ rel: string, href: string }> }

const paged = async (query: string, limit: number): Promise<string[]> => (await followPages(app, `/collections/sources/items?limit=${limit}&${query}`, editor.headers, 50)).map((f) => f.id)

const sqlOrder = async (orderBy: string) =>
  (await sql<{ id: string }>`SELECT id FROM sources WHERE organisation = 'org-attr-sort' ORDER BY ${sql.raw(orderBy)}`.execute(db)).rows.map((r) => r.id)

t.test('sortby on declared attributes: the expression index order, NULLs last ascending, first descending, pages across ties', async (t) => {
  const cases: Array<[string, string]> = [
    ['sortby=hectares', "sources_attribute_number(attributes, 'hectares'), id"],
    ['sortby=-hectares', "sources_attribute_number(attributes, 'hectares') DESC, id DESC"],
    ['sortby=parcel_no,-hectares', "sources_attribute_text(attributes, 'parcel_no'), sources_attribute_number(attributes, 'hectares') DESC, id DESC"],
    ['sortby=-hectares,start_at', "sources_attribute_number(attributes, 'hectares') DESC, lower(period), id"],
    ['sortby=planted,organic', "sources_attribute_timestamp(attributes, 'planted'), sources_attribute_boolean(attributes, 'organic'), id"],
    ['sortby=-organic,hectares', "sources_attribute_boolean(attributes, 'organic') DESC, sources_attribute_number(attributes, 'hectares'), id"]
  ]
  for (const [query, orderBy] of cases) {
    const expected = await sqlOrder(orderBy)
    t.equal(expected.length, 14)
    for (const limit of [1, 3, 5]) t.same(await paged(query, limit), expected, `${query}, pages of ${limit}`)
  }
  const ascending = await paged('sortby=hectares', 20)
  const without = (await sql<{ id: string }>`SELECT id FROM sources WHERE organisation = 'org-attr-sort' AND NOT attributes ? 'hectares' ORDER BY id`.execute(db)).rows.map((r) => r.id)
  t.equal(without.length, 2)
  t.same(ascending.slice(-2), without, 'the two without hectares come last ascending')
  t.same((await paged('sortby=-hectares', 20)).slice(0, 2), [...without].reverse(), 'and first descending')
})

t.test('a cursor with a null where the key is not an attribute, or a value of the wrong type, is a 400', async (t) => {
  const first = (await get('/collections/sources/items?limit=2&sortby=hectares')).json() as Page
  const cursor = new URL(first.links.find((l) => l.rel === 'next')?.href ?? '').searchParams.get('cursor') ?? ''
  const body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { v: unknown[], i: string, q: string }
  const forged = (v: unknown[]) => Buffer.from(JSON.stringify({ ...body, v })).toString('base64url')
  expectError(t, await get(`/collections/sources/items?limit=2&sortby=hectares&cursor=${forged(['ten'])}`), 400, 'VALIDATION_FAILED')
  t.equal((await get(`/collections/sources/items?limit=2&sortby=hectares&cursor=${forged([null])}`)).statusCode, 200, 'null: after the last value')
  expectError(t, await get(`/collections/sources/items?limit=2&sortby=hectares&cursor=${forged([1])}`), 400, 'VALIDATION_FAILED')
})

t.test('properties= chooses declared attributes and service properties; undeclared ones only without it', async (t) => {
  const all = (await get('/collections/sources/items?limit=1&sortby=hectares')).json() as Page
  t.match(all.features[0]?.properties, { note: /^undeclared \d+$/, hectares: 0.75, parcel_no: /^NL-/ }, 'every attribute without properties=')
  const chosen = (await get('/collections/sources/items?limit=2&sortby=hectares&properties=hectares,start_at')).json() as Page
  for (const f of chosen.features) t.same(Object.keys(f.properties).sort(), ['hectares', 'start_at'])
  t.equal(chosen.features[0]?.properties.hectares, 0.75)
  const only = (await get('/collections/sources/items?limit=2&sortby=hectares&properties=parcel_no&skipGeometry=true')).json() as Page
  t.same(only.features.map((f) => [f.geometry, Object.keys(f.properties)]), [[null, ['parcel_no']], [null, ['parcel_no']]])
  const none = (await get('/collections/sources/items?limit=2&sortby=hectares&properties=start_at')).json() as Page
  t.same(Object.keys(none.features[0]?.properties ?? {}), ['start_at'], 'no attribute when none is named')
  expectError(t, await get('/collections/sources/items?properties=note'), 400, 'VALIDATION_FAILED')
})

t.test('the sortables and returnables name the organisation\'s declared attributes; another organisation cannot use them', async (t) => {
  for (const doc of ['sortables', 'returnables', 'queryables']) {
    const body = (await get(`/collections/sources/${doc}`)).json() as { properties: Record<string, { type: string, description?: string }> }
    t.equal(body.properties.hectares?.type, 'number', `${doc}: hectares`)
    t.equal(body.properties.hectares?.description, 'The area in hectares, as surveyed.')
    const theirs = (await get(`/collections/sources/${doc}`, other.headers)).json() as { properties: Record<string, unknown> }
    t.notOk('hectares' in theirs.properties, `${doc}: not another organisation's`)
  }
  const refused = expectError(t, await get('/collections/sources/items?sortby=hectares', other.headers), 400, 'VALIDATION_FAILED')
  t.match(refused.message, /"hectares" is not sortable/)
})
