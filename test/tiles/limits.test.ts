// A tile stays bounded at any density: at most TILES_MAX_FEATURES features, the largest first
// (marks for small sources included), and about TILES_MAX_BYTES bytes (512,000 by default): a
// tile over it is drawn again with half the features it held, the largest kept. The sources are
// seeded in SQL, each grid inside one tile.
import t from 'tap'
import { sql } from 'kysely'
import { plainTileStore } from '../../src/tiles/tiles.store.js'
import { build, session } from '../helper.js'
import { type TileZxy, decode, tileBounds, tileOf, tileUrl } from './mvt.js'

const MAX_FEATURES = 100
const ctx = await build(t, { TILES_MAX_FEATURES: MAX_FEATURES })
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-limits')

/**
 * cols × rows boxes of `size` degrees in a grid inside a tile (no two overlap, so no conflicts),
 * the n-th box `grow` degrees wider than the one before, so that areas differ; feature ids
 * `prefix-n`, padded with dots to `idLength` characters (at least 20).
 */
async function grid (tile: TileZxy, { prefix, cols, rows, size, grow = 0, idLength = 0 }: { prefix: string, cols: number, rows: number, size: number, grow?: number, idLength?: number }): Promise<void> {
  const [w, s, e, n] = tileBounds(tile)
  const dx = ((e - w) * 0.9) / cols
  const dy = ((n - s) * 0.9) / rows
  if (size + grow * cols * rows > Math.min(dx, dy)) throw new Error('the boxes would overlap')
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT 'src_' || ${prefix} || lpad(i::text, 12, '0'), rpad(${prefix} || '-' || i, greatest(${idLength}::int, 20), '.'), 'org-limits', ${editor.account.id}::uuid,
      ST_MakeEnvelope(x, y, x + ${size}::float8 + i * ${grow}::float8, y + ${size}::float8, 4326), '[2024-01-01Z,2025-01-01Z)'
    FROM (SELECT i, ${w + (e - w) * 0.05}::float8 + (i % ${cols}) * ${dx}::float8 AS x, ${s + (n - s) * 0.05}::float8 + (i / ${cols}) * ${dy}::float8 AS y
          FROM generate_series(0, ${cols * rows - 1}) AS i) AS g`.execute(db)
}
const largest = async (prefix: string, limit: number): Promise<string[]> => (await sql<{ id: string }>`
  SELECT id FROM sources WHERE id LIKE ${`src_${prefix}%`} ORDER BY area_m2 DESC, id LIMIT ${limit}`.execute(db)).rows.map((r) => r.id).sort()
const get = (url: string) => app.inject({ method: 'GET', url, headers: editor.headers })

t.test('TILES_MAX_FEATURES: a tile of 300 sources holds the 100 largest', async (t) => {
  const tile = tileOf(9.8, 49.8, 7)
  await grid(tile, { prefix: 'big', cols: 20, rows: 15, size: 0.03, grow: 0.0001 })
  const res = await get(tileUrl(tile))
  t.equal(res.statusCode, 200)
  const features = decode(res.rawPayload, tile)
  t.equal(features.length, MAX_FEATURES, `${MAX_FEATURES} of 300`)
  t.ok(features.every((f) => f.properties.count === 1), 'each a source, none a mark')
  t.same(features.map((f) => f.properties.id as string).sort(), await largest('big', MAX_FEATURES), 'the largest by area')
  const closer = tileOf(9.8, 49.8, 12)
  t.ok(decode((await get(tileUrl(closer))).rawPayload, closer).length < MAX_FEATURES, 'zoomed in, fewer sources than the cap: all drawn')
})

t.test('TILES_MAX_FEATURES holds for marks too: 300 small sources in 300 cells, 100 marks', async (t) => {
  const tile = tileOf(-50, -25, 3)
  await grid(tile, { prefix: 'dot', cols: 20, rows: 15, size: 0.001 })
  const features = decode((await get(tileUrl(tile))).rawPayload, tile)
  t.equal(features.length, MAX_FEATURES)
  t.ok(features.every((f) => f.properties.count === 1 && typeof f.properties.id === 'string'), 'a mark for one source carries its id')
})

t.test('TILES_MAX_BYTES (512,000 by default): a tile over it is drawn with half the features it held, the largest', async (t) => {
  const tile = tileOf(-99.5, 39.5, 7)
  // 4,000 sources with 256-character feature ids: about 1.4 MB as one tile.
  await grid(tile, { prefix: 'heavy', cols: 80, rows: 50, size: 0.025, grow: 0.000001, idLength: 256 })
  const input = { tile: { z: tile[0], x: tile[1], y: tile[2] }, scope: { organisation: 'org-limits' }, filter: {}, maxFeatures: 10_000 }
  const { mvt: whole } = await plainTileStore(db, { maxBytes: Number.MAX_SAFE_INTEGER, extent: async () => null }).tile(input)
  t.equal(decode(whole, tile).length, 4000, 'unbounded: all 4,000')
  t.ok(whole.length > 512_000, `unbounded: ${whole.length} bytes`)
  const { mvt: bounded } = await plainTileStore(db, { maxBytes: 512_000, extent: async () => null }).tile(input)
  t.ok(bounded.length <= 512_000, `bounded: ${bounded.length} bytes`)
  const kept = decode(bounded, tile)
  t.equal(kept.length, 1000, 'halved from what it held: 4,000, then 2,000 (still over), then 1,000')
  t.same(kept.map((f) => f.properties.id as string).sort(), await largest('heavy', 1000), 'the largest by area')
  const res = await get(tileUrl(tile))
  t.ok(res.rawPayload.length <= 512_000, 'through the route, with TILES_MAX_BYTES\'s default')
  t.equal(decode(res.rawPayload, tile).length, MAX_FEATURES, 'and TILES_MAX_FEATURES')
})
