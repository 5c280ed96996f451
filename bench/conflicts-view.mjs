// What one source's conflicts cost through the view source_conflicts (sql/007): 200,000 grid
// boxes plus a dense region of 2,000 boxes where each overlaps 8 neighbours; the plan and the
// mean time of SELECT * FROM source_conflicts WHERE source_id = $1 for a dense source and a
// lone one. Usage: npm run build && node bench/conflicts-view.mjs (figures in docs/performance.md)
import { benchDatabase } from '../bench/setup.mjs'
const log = (m) => process.stderr.write(`[conflicts-view] ${m}\n`)
const { db, seed, accountId } = await benchDatabase(log)
await seed(1, 200000, { period: "tstzrange('2020-01-01Z'::timestamptz + (n % 1461) * interval '1 day', '2020-01-01Z'::timestamptz + (n % 1461 + 30) * interval '1 day', '[)')" })
// A dense region: 2,000 boxes of 0.004° on a 0.002° grid (each overlaps ~8 neighbours), one period.
await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT 'src_dense' || lpad(n::text, 16, '0'), 'dense-' || n, 'bench', $1::uuid,
    ST_MakeEnvelope(40 + (n % 50) * 0.002, (n / 50) * 0.002, 40 + (n % 50) * 0.002 + 0.004, (n / 50) * 0.002 + 0.004, 4326), '[2024-01-01Z,2024-02-01Z)'
  FROM generate_series(1, 2000) AS n`, [accountId])
await db.query('VACUUM ANALYZE sources')
for (const id of ['src_dense0000000000001025', 'src_0000000000000000123456']) {
  const r = await db.query(`EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM source_conflicts WHERE source_id = $1`, [id])
  console.log(`-- ${id}\n${r.rows.map((x) => x['QUERY PLAN']).join('\n')}`)
  const c = await db.query(`SELECT count(*) FROM source_conflicts WHERE source_id = $1`, [id]); console.log('conflicts:', c.rows[0].count)
  const t0 = performance.now(); for (let i = 0; i < 50; i++) await db.query(`SELECT * FROM source_conflicts WHERE source_id = $1`, [id]); console.log('mean ms', ((performance.now() - t0) / 50).toFixed(2))
}
await db.end(); process.exit(0)
