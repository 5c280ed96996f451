// A CSV or FlatGeobuf page read in several queries (more than ITEMS_ROWS_PER_QUERY features,
// here 3) names its columns before its rows: it reads the types of every attribute of the page's
// sources first (sources.listing.ts pageAttributeTypesQuery), so an attribute that only a later
// query's Features hold still has its column, and one whose values are of several JSON types a
// column that holds them all; the page's own features only (not the next page's).
import t from 'tap'
import { deserialize } from 'flatgeobuf/lib/mjs/geojson.js'
import { build, collection, feature, session } from '../helper.js'

const ctx = await build(t, { ITEMS_ROWS_PER_QUERY: 3 })
const editor = await session(ctx, 'editor', 'org-s')
const box = (x: number) => [[[x, 0], [x + 0.5, 0], [x + 0.5, 0.5], [x, 0.5], [x, 0]]]
// Nine sources a day apart; sorted by start_at, the page of 8 is read 3 at a time. `a` is a
// number, then a string in the third query; `late` comes in the third query only; `next` only
// on the ninth, which is on the next page.
const attributes: Record<number, Record<string, unknown>> = { 0: { a: 1 }, 1: { a: 2 }, 6: { a: 'six', late: true }, 8: { next: 'x' } }
const features = Array.from({ length: 9 }, (_, n) => ({
  ...feature(`s-${n}`, { coordinates: box(n) }),
  properties: { start_at: `2024-01-0${n + 1}T00:00:00Z`, end_at: '2024-12-31T00:00:00Z', ...attributes[n] }
}))
const res = await ctx.app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(...features) })
if (res.statusCode !== 201) throw new Error(res.body)
const get = async (f: string) => await ctx.app.inject({ method: 'GET', url: `/collections/sources/items?f=${f}&limit=8&sortby=start_at`, headers: editor.headers })

t.test('FlatGeobuf: every attribute of the page, each column holding all its values', async (t) => {
  const page = await get('fgb')
  t.equal(page.statusCode, 200, page.statusCode === 200 ? 'a FlatGeobuf file' : page.body)
  const byFeatureId = new Map<string, Record<string, unknown>>()
  for await (const f of deserialize(new Uint8Array(page.rawPayload)) as AsyncGenerator<{ properties: Record<string, unknown> }>) byFeatureId.set(f.properties.feature_id as string, f.properties)
  t.equal(byFeatureId.size, 8)
  t.same([byFeatureId.get('s-0')?.a, byFeatureId.get('s-6')?.a], ['1', 'six'], 'a number beside a later string: a string column, both kept')
  t.equal(byFeatureId.get('s-6')?.late, true, 'an attribute of the third query alone, as a boolean')
  t.notOk([...byFeatureId.values()].some((p) => Object.hasOwn(p, 'next')), 'no column for the next page\'s attribute')
})

t.test('CSV: the header names every attribute of the page, however late it comes', async (t) => {
  const page = await get('csv')
  t.equal(page.statusCode, 200)
  const [header, ...rows] = page.body.split('\r\n').filter((l) => l !== '')
  const names = (header as string).split(',')
  t.ok(names.includes('a') && names.includes('late'), 'a and late are columns')
  t.notOk(names.includes('next'), 'the next page\'s attribute is not')
  const cell = (n: number, name: string): string | undefined => rows.find((r) => r.includes(`,s-${n},`))?.replace(/"[^"]*"/g, 'W').split(',')[names.indexOf(name)]
  t.same([cell(0, 'a'), cell(6, 'a'), cell(6, 'late'), cell(3, 'late')], ['1', 'six', 'true', ''], 'each value in its column, empty where a source has none')
})
