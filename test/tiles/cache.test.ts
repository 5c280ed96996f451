// The tile cache (TILES_CACHE_BYTES): a tile asked again is sent from memory (counted as a hit in
// /metrics) while no write touched it; a write inside it is drawn in the very next request, on
// this instance and on another one on the same database; a write elsewhere keeps it cached; a
// deleted source disappears; the cache's bytes stay within the bound under a storm of tiles.
import t from 'tap'
import { sql } from 'kysely'
import type { App } from '../../src/app.js'
import { build, collection, feature, secondInstance, session } from '../helper.js'
import { decode, tileOf, tileUrl, type TileZxy } from './mvt.js'

const TOKEN = 'metrics-token-0123456789'
const ctx = await build(t, { METRICS_TOKEN: TOKEN })
const other = await secondInstance(t, ctx, { METRICS_TOKEN: TOKEN })
const editorA = await session(ctx, 'editor', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')

const box = (w: number, s: number, size = 0.01) => [[[w, s], [w + size, s], [w + size, s + size], [w, s + size], [w, s]]]
async function post (app: App, headers: Record<string, string>, ...features: unknown[]): Promise<string[]> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(...features) })
  if (res.statusCode !== 201) throw new Error(`seeding: ${res.statusCode} ${res.body}`)
  return (res.json() as { sources: Array<{ id: string }> }).sources.map((f) => f.id)
}
const get = (app: App, tile: TileZxy, headers: Record<string, string> = editorA.headers) => app.inject({ method: 'GET', url: tileUrl(tile), headers })
const shown = async (app: App, tile: TileZxy, headers?: Record<string, string>) =>
  decode((await get(app, tile, headers)).rawPayload, tile).map((f) => String(f.properties.feature_id)).sort()

/** A metric's value as /metrics serves it (0 when absent). */
async function metric (app: App, line: string): Promise<number> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
  if (res.statusCode !== 200) throw new Error(`/metrics: ${res.statusCode}`)
  const found = res.body.split('\n').find((l) => l.startsWith(`${line} `))
  return found === undefined ? 0 : Number(found.slice(line.length + 1))
}
const hits = (app: App) => metric(app, 'source_registry_tile_cache_lookups_total{result="hit"}')
const misses = (app: App) => metric(app, 'source_registry_tile_cache_lookups_total{result="miss"}')

const here = tileOf(10.005, 50.005, 10)
const there = tileOf(-100, 40, 10)
await post(ctx.app, editorA.headers, feature('a-one', { coordinates: box(10, 50) }))
await post(ctx.app, editorB.headers, feature('b-one', { coordinates: box(10.02, 50.01) }))

t.test('a tile asked again is sent from memory, the same bytes and ETag, per scope', async (t) => {
  const first = await get(ctx.app, here)
  t.equal(first.statusCode, 200)
  const before = await hits(ctx.app)
  const again = await get(ctx.app, here)
  t.equal(await hits(ctx.app), before + 1, 'a hit')
  t.same(again.rawPayload, first.rawPayload, 'the same bytes')
  t.equal(again.headers.etag, first.headers.etag, 'the same ETag')
  t.same(await shown(ctx.app, here), ['a-one'], 'org-a sees its own')
  t.same(await shown(ctx.app, here, editorB.headers), ['b-one'], 'org-b its own: the scope is part of the key')
  t.equal((await get(ctx.app, here, { ...editorA.headers, 'if-none-match': first.headers.etag as string })).statusCode, 304, 'a revalidation still 304')
})

t.test('a write inside the tile is drawn in the next request, on this instance and on another', async (t) => {
  t.same(await shown(ctx.app, here), ['a-one'])
  t.same(await shown(other.app, here), ['a-one'])
  t.same(await shown(other.app, here), ['a-one'], 'cached on the other instance too')
  t.ok(await hits(other.app) >= 1, 'the other instance hit its own cache')

  const missesBefore = [await misses(ctx.app), await misses(other.app)]
  await post(ctx.app, editorA.headers, feature('a-two', { coordinates: box(10.04, 50.02) }))
  t.same(await shown(ctx.app, here), ['a-one', 'a-two'], 'this instance: the write is in the next tile')
  t.same(await shown(other.app, here), ['a-one', 'a-two'], 'the other instance: the write is in its next tile')
  t.equal(await misses(ctx.app), missesBefore[0] as number + 1, 'drawn afresh here')
  t.equal(await misses(other.app), missesBefore[1] as number + 1, 'and there')

  await post(other.app, editorA.headers, feature('a-three', { coordinates: box(10.06, 50.03) }))
  t.same(await shown(ctx.app, here), ['a-one', 'a-three', 'a-two'], 'a write on the other instance, seen here')

  await sql`UPDATE sources SET period = tstzrange('2030-01-01', '2030-02-01') WHERE feature_id = 'a-three'`.execute(ctx.db)
  const inJanuary = await ctx.app.inject({ method: 'GET', url: tileUrl(here, '?datetime=2030-01-15T00:00:00Z'), headers: editorA.headers })
  t.same(decode(inJanuary.rawPayload, here).map((f) => f.properties.feature_id), ['a-three'], 'an UPDATE in plain SQL, with a datetime filter')
})

t.test('a write elsewhere keeps the tile cached', async (t) => {
  await get(ctx.app, here)
  await get(other.app, here)
  const before = [await hits(ctx.app), await hits(other.app)]
  const tag = (await get(ctx.app, here)).headers.etag
  await post(ctx.app, editorA.headers, feature('far', { coordinates: box(-100, 40) }))
  t.equal((await get(ctx.app, here)).headers.etag, tag, 'the same ETag')
  await get(other.app, here)
  t.equal(await hits(ctx.app), before[0] as number + 2, 'hits here, before and after the write elsewhere')
  t.equal(await hits(other.app), before[1] as number + 1, 'a hit on the other instance after it')
  t.same(await shown(ctx.app, there), ['far'], 'the tile it went into shows it')
})

t.test('a deleted source disappears from the cached tile, on both instances', async (t) => {
  const [id] = await post(ctx.app, editorA.headers, feature('doomed', { coordinates: box(10.08, 50.04) }))
  t.ok((await shown(ctx.app, here)).includes('doomed'))
  t.ok((await shown(other.app, here)).includes('doomed'))
  t.ok((await shown(other.app, here)).includes('doomed'), 'cached')
  const deleted = await other.app.inject({ method: 'DELETE', url: `/sources/?id=${id as string}`, headers: editorA.headers })
  t.equal(deleted.statusCode, 200, deleted.body)
  t.notOk((await shown(ctx.app, here)).includes('doomed'), 'gone here')
  t.notOk((await shown(other.app, here)).includes('doomed'), 'gone there')
  await sql`DELETE FROM sources WHERE feature_id = 'far'`.execute(ctx.db)
  t.same(await shown(ctx.app, there), [], 'a DELETE in plain SQL too')
})

t.test('concurrent requests of several tiles: each its own counters, read together', async (t) => {
  const tiles = [here, there, tileOf(60, -30, 10)]
  const tags = await Promise.all(tiles.map(async (tile) => (await get(ctx.app, tile)).headers.etag as string))
  const all = async () => await Promise.all(Array.from({ length: 24 }, async (_, i) =>
    (await get(ctx.app, tiles[i % 3] as TileZxy, { ...editorA.headers, 'if-none-match': tags[i % 3] as string })).statusCode))
  t.same(await all(), Array.from({ length: 24 }, () => 304), 'every one unchanged')
  await post(ctx.app, editorA.headers, feature('concurrent', { coordinates: box(10.09, 50.045) }))
  t.same(await all(), Array.from({ length: 24 }, (_, i) => i % 3 === 0 ? 200 : 304), 'the written tile changed, the others not')
})

t.test('the bound holds under a storm of distinct tiles', async (t) => {
  const bound = 16384
  const small = await secondInstance(t, ctx, { METRICS_TOKEN: TOKEN, TILES_CACHE_BYTES: bound })
  const grid = Array.from({ length: 40 }, (_, i) => feature(`storm-${i}`, { coordinates: box(20 + (i % 8) * 0.2, 30 + Math.floor(i / 8) * 0.2, 0.05) }))
  await post(ctx.app, editorA.headers, ...grid)
  let most = 0
  for (let i = 0; i < 40; i++) {
    const tile = tileOf(20.025 + (i % 8) * 0.2, 30.025 + Math.floor(i / 8) * 0.2, 11)
    t.equal((await get(small.app, tile)).statusCode, 200)
    most = Math.max(most, await metric(small.app, 'source_registry_tile_cache_bytes'))
  }
  const entries = await metric(small.app, 'source_registry_tile_cache_entries')
  t.ok(most > 0 && most <= bound, `at most ${bound} bytes (${most})`)
  t.ok(entries > 0 && entries < 40, `older tiles left (${entries} of 40 kept)`)
  t.equal(await misses(small.app), 40, 'every tile drawn')
})
