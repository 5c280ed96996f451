// docs/scale.md's Citus design, simulated on one PostgreSQL: sources distributed by their 1° cells,
// each source stored once per cell its bounding box touches (sim_source_cells, hash-partitioned
// by cell into SHARDS partitions standing in for shards), and conflicts found by joins within one
// cell only (a pair is computed in the first cell both boxes share, so once). Checks against the
// real table with its triggers (sql/008–012) on the same data:
// - conflict pairs: the same set, exactly; and what storing each source in its home cell alone
//   would miss;
// - bbox listings: the same ids, none twice (a row is answered by the first cell its box shares
//   with the query's);
// - cost: bulk load and one-at-a-time writes (real trigger against the cell-local rule), listings,
//   and how many cells (shards) each touches.
// Env: SIM_SOURCES (default 20000), SIM_SHARDS (default 8), SIM_SINGLE (default 300), SIM_QUERIES (default 200).
import { execFileSync } from 'node:child_process'
import pg from 'pg'
import { startPostgis } from '../scripts/postgis.mjs'

const N = Number(process.env.SIM_SOURCES ?? 20_000)
const SHARDS = Number(process.env.SIM_SHARDS ?? 8)
const SINGLE = Number(process.env.SIM_SINGLE ?? 300)
const QUERIES = Number(process.env.SIM_QUERIES ?? 200)
const log = (m) => process.stderr.write(`[sim] ${m}\n`)

const cluster = await startPostgis({ log })
process.on('exit', () => cluster.stop())
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
const admin = new pg.Client({ connectionString: cluster.url }); await admin.connect()
await admin.query('CREATE DATABASE sim'); await admin.end()
const url = cluster.url.replace(/\/postgres$/, '/sim')
execFileSync(process.execPath, ['dist/cli.js', 'migrate'], { env: { PATH: process.env.PATH, DATABASE_URL: url }, stdio: 'ignore' })
execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'sim@example.org', '--org', 'sim', '--role', 'editor', '--password-stdin'], { env: { PATH: process.env.PATH, DATABASE_URL: url }, input: 'sim password 1234', stdio: ['pipe', 'ignore', 'inherit'] })
const db = new pg.Client({ connectionString: url }); await db.connect()
const q = (text, values) => db.query(text, values)
const accountId = (await q(`SELECT id FROM accounts WHERE email = 'sim@example.org'`)).rows[0].id
const ms = async (fn) => { const t0 = performance.now(); const r = await fn(); return [performance.now() - t0, r] }

// The cells of a box (1°, x-major ids as sql/008's coarse lock keys). The first cell two boxes
// share is that of the lower-left corner of their common box, written out in each query (as
// sim_cell(greatest(xmin, xmin'), greatest(ymin, ymin'))) so that PostgreSQL inlines it.
await q(`
CREATE FUNCTION sim_cell(x float8, y float8) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ((floor(x)::integer + 180) * 181 + (floor(y)::integer + 90));
CREATE FUNCTION sim_cells(b box2d) RETURNS integer[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY(SELECT sim_cell(x, y) FROM generate_series(floor(ST_XMin(b))::integer, floor(ST_XMax(b))::integer) AS x,
    generate_series(floor(ST_YMin(b))::integer, floor(ST_YMax(b))::integer) AS y ORDER BY 1);
CREATE TABLE sim_source_cells (
  cell integer NOT NULL, id text NOT NULL, home integer NOT NULL,
  geom geometry(Polygon, 4326) NOT NULL, period tstzrange NOT NULL, area_m2 float8 NOT NULL,
  PRIMARY KEY (cell, id)) PARTITION BY HASH (cell);
CREATE TABLE sim_pairs (cell integer NOT NULL, source_id text NOT NULL, other_id text NOT NULL, overlap_m2 float8 NOT NULL);
`)
for (let i = 0; i < SHARDS; i++) await q(`CREATE TABLE sim_source_cells_${i} PARTITION OF sim_source_cells FOR VALUES WITH (MODULUS ${SHARDS}, REMAINDER ${i})`)
// (cell, geom): a shard's own spatial index, the cell first as the shard key would be.
await q('CREATE INDEX sim_source_cells_cell_geom ON sim_source_cells USING gist (cell, geom)')
await q('CREATE INDEX sim_source_cells_id ON sim_source_cells (id)')
// As the real trigger (sql/008): partners through the spatial index, whatever the statistics say,
await q('SET enable_seqscan = off')
// … and without JIT, which the disabled scans' cost would switch on for every statement.
await q('SET jit = off')

// The data: a 4° × 4° region (16 cells), 90 % boxes of 0.002–0.01°, 9 % of 0.05–0.3°, 1 % of
// 0.5–1.5°; periods of 1–3 months in 2024. Ids sorted as inserted.
const rand = (a, b) => a + Math.random() * (b - a)
const rows = Array.from({ length: N }, (_, i) => {
  const r = Math.random()
  const size = r < 0.9 ? rand(0.002, 0.01) : r < 0.99 ? rand(0.05, 0.3) : rand(0.5, 1.5)
  const x = rand(0, 4 - size); const y = rand(0, 4 - size)
  const start = new Date(Date.UTC(2024, 0, 1) + Math.floor(rand(0, 270)) * 86_400_000)
  const end = new Date(start.getTime() + Math.floor(rand(30, 90)) * 86_400_000)
  return { id: `src_${String(i).padStart(22, '0')}`, x, y, size, start: start.toISOString(), end: end.toISOString() }
})
const batchArgs = (batch) => [batch.map((r) => r.id), batch.map((r) => r.x), batch.map((r) => r.y), batch.map((r) => r.size), batch.map((r) => r.start), batch.map((r) => r.end)]
const unnested = `unnest($1::text[], $2::float8[], $3::float8[], $4::float8[], $5::timestamptz[], $6::timestamptz[]) AS t(id, x, y, size, s, e)`
const realInsert = (batch) => q(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT t.id, t.id, 'sim', '${accountId}'::uuid, ST_MakeEnvelope(t.x, t.y, t.x + t.size, t.y + t.size, 4326), tstzrange(t.s, t.e, '[)') FROM ${unnested}`, batchArgs(batch))
// The cell-local rule: the new rows into every cell of their box, then, within each cell, the
// pairs of a new row whose first shared cell it is (a pair of two new rows from the smaller id).
// `only` limits the join to the cells given (one write: partition pruning, as a router query).
async function simInsert (batch, { only = false } = {}) {
  await q(`INSERT INTO sim_source_cells (cell, id, home, geom, period, area_m2)
    SELECT c.cell, t.id, sim_cell(t.x, t.y), g.geom, tstzrange(t.s, t.e, '[)'), lonlat_area_m2(g.geom)
    FROM ${unnested}
    CROSS JOIN LATERAL (SELECT ST_MakeEnvelope(t.x, t.y, t.x + t.size, t.y + t.size, 4326) AS geom) AS g
    CROSS JOIN LATERAL unnest(sim_cells(g.geom::box2d)) AS c(cell)`, batchArgs(batch))
  const ids = batch.map((r) => r.id)

  const cells = only ? `AND n.cell = ANY(${'$3'}::integer[]) AND o.cell = ANY(${'$3'}::integer[])` : ''
  const values = [ids, sourcesTolerance]
  if (only) values.push([...new Set(batch.flatMap((r) => cellsOf(r)))])
  // The new ids as a relation (a hashed lookup), not an array searched per candidate.
  const explain = process.env.SIM_EXPLAIN === '1' && !only && batch[0].id.endsWith('1000') ? 'EXPLAIN (ANALYZE, BUFFERS) ' : ''
  const plan = await q(`${explain}WITH new AS MATERIALIZED (SELECT unnest($1::text[]) AS id)
    , n AS MATERIALIZED (SELECT * FROM sim_source_cells WHERE id IN (SELECT id FROM new) ${cells.replace(/n\.cell/, 'cell').replace(/ AND o\.cell.*$/, '')})
    INSERT INTO sim_pairs (cell, source_id, other_id, overlap_m2)
    SELECT n.cell, d.a, d.b, x.overlap_m2
    FROM n
    JOIN sim_source_cells AS o ON o.cell = n.cell AND o.geom && n.geom AND NOT isempty(o.period * n.period) AND o.id <> n.id
    CROSS JOIN LATERAL (SELECT lonlat_conflict_overlap_m2(n.geom, o.geom, $2) AS overlap_m2 OFFSET 0) AS x
    CROSS JOIN LATERAL (VALUES (n.id, o.id), (o.id, n.id)) AS d (a, b)
    WHERE true ${cells}
      AND n.cell = sim_cell(greatest(ST_XMin(n.geom), ST_XMin(o.geom)), greatest(ST_YMin(n.geom), ST_YMin(o.geom)))
      AND (n.id < o.id OR NOT EXISTS (SELECT 1 FROM new AS m WHERE m.id = o.id))
      AND x.overlap_m2 IS NOT NULL`, values)
  if (explain !== '') for (const r of plan.rows) log(r['QUERY PLAN'])
}
const cellsOf = (r) => {
  const out = []
  for (let x = Math.floor(r.x); x <= Math.floor(r.x + r.size); x++) for (let y = Math.floor(r.y); y <= Math.floor(r.y + r.size); y++) out.push((x + 180) * 181 + (y + 90))
  return out
}
const sourcesTolerance = Number((await q('SELECT sources_conflict_tolerance_m() AS t')).rows[0].t)

const bulk = rows.slice(0, N - SINGLE)
const single = rows.slice(N - SINGLE)
let realBulkMs = 0; let simBulkMs = 0
for (let i = 0; i < bulk.length; i += 1000) {
  const batch = bulk.slice(i, i + 1000)
  realBulkMs += (await ms(() => realInsert(batch)))[0]
  simBulkMs += (await ms(() => simInsert(batch)))[0]
  if (i === 0) await q('ANALYZE')
}
log(`bulk: ${bulk.length} sources, real ${realBulkMs.toFixed(0)} ms, cell-local ${simBulkMs.toFixed(0)} ms`)
await q('ANALYZE')
const realSingle = []; const simSingle = []; const singleCells = []
for (const r of single) {
  realSingle.push((await ms(() => realInsert([r])))[0])
  simSingle.push((await ms(() => simInsert([r], { only: true })))[0])
  singleCells.push(cellsOf(r).length)
}

const pairSet = async (table, a, b) => new Set((await q(`SELECT DISTINCT least(${a}, ${b}) || ' ' || greatest(${a}, ${b}) AS k FROM ${table}`)).rows.map((r) => r.k))
const real = await pairSet('source_conflict_pairs', 'source_id', 'other_id')
const sim = await pairSet('sim_pairs', 'source_id', 'other_id')
const simRows = Number((await q('SELECT count(*) AS n FROM sim_pairs')).rows[0].n)
const onlyInReal = [...real].filter((k) => !sim.has(k)).length
const onlyInSim = [...sim].filter((k) => !real.has(k)).length
// Home cell alone: a pair is found only when both sources' home cells are the same cell.
const homeOnly = Number((await q(`SELECT count(*) AS n FROM (SELECT DISTINCT least(source_id, other_id), greatest(source_id, other_id)
  FROM sim_pairs AS p JOIN sim_source_cells AS a ON a.id = p.source_id AND a.cell = a.home JOIN sim_source_cells AS b ON b.id = p.other_id AND b.cell = b.home
  WHERE a.home = b.home) AS x`)).rows[0].n)
const overlapDiff = Number((await q(`SELECT coalesce(max(abs(p.overlap_m2 - s.overlap_m2)), 0) AS d FROM source_conflict_pairs AS p
  JOIN sim_pairs AS s ON s.source_id = p.source_id AND s.other_id = p.other_id`)).rows[0].d)
const spanning = (await q(`SELECT count(DISTINCT id) FILTER (WHERE cell <> home) AS spanning, count(*) AS cell_rows, count(DISTINCT id) AS sources FROM sim_source_cells`)).rows[0]

// Listings: random boxes of 0.05–1.5°, the real query against the cells' union.
let listingsEqual = 0; let duplicates = 0; const realList = []; const simList = []; const queryCells = []
for (let i = 0; i < QUERIES; i++) {
  const size = rand(0.05, 1.5); const x = rand(0, 4 - size); const y = rand(0, 4 - size)
  const env = [x, y, x + size, y + size]
  const [tr, a] = await ms(() => q(`SELECT id FROM sources WHERE geom && ST_MakeEnvelope($1, $2, $3, $4, 4326) AND ST_Intersects(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326))`, env))
  const cells = cellsOf({ x, y, size })
  const [ts, b] = await ms(() => q(`SELECT id FROM sim_source_cells WHERE cell = ANY($5::integer[]) AND geom && ST_MakeEnvelope($1, $2, $3, $4, 4326)
    AND ST_Intersects(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326)) AND cell = sim_cell(greatest(ST_XMin(geom), $1), greatest(ST_YMin(geom), $2))`, [...env, cells]))
  realList.push(tr); simList.push(ts); queryCells.push(cells.length)
  if (process.env.SIM_EXPLAIN === '1') log(`listing ${i}: real ${tr.toFixed(2)} ms, cells ${ts.toFixed(2)} ms`)
  if (process.env.SIM_EXPLAIN === '1' && i === 0) {
    for (const r of (await q(`EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM sim_source_cells WHERE cell = ANY($5::integer[]) AND geom && ST_MakeEnvelope($1, $2, $3, $4, 4326)
    AND ST_Intersects(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326)) AND cell = sim_cell(greatest(ST_XMin(geom), $1), greatest(ST_YMin(geom), $2))`, [...env, cells])).rows) log(r['QUERY PLAN'])
    for (const r of (await q(`EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM sources WHERE geom && ST_MakeEnvelope($1, $2, $3, $4, 4326) AND ST_Intersects(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326))`, env)).rows) log(r['QUERY PLAN'])
  }
  const ids = b.rows.map((r) => r.id)
  duplicates += ids.length - new Set(ids).size
  const want = new Set(a.rows.map((r) => r.id))
  if (want.size === new Set(ids).size && ids.every((id) => want.has(id))) listingsEqual++
}

const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]
const lines = [
  `bench/scale-sim.mjs: ${N} sources in 4° × 4° (16 cells of 1°), ${SHARDS} hash partitions by cell, PostgreSQL ${(await q('SHOW server_version')).rows[0].server_version}`,
  '',
  `- sources spanning more than one cell: ${spanning.spanning} of ${spanning.sources} (${spanning.cell_rows} cell rows, ${(spanning.cell_rows / spanning.sources).toFixed(3)} per source)`,
  `- conflict pairs: real ${real.size}, cell-local ${sim.size} (${simRows / 2} found, each once: ${simRows / 2 === sim.size ? 'yes' : 'NO'}); only in real ${onlyInReal}, only in cell-local ${onlyInSim}; largest overlap_m2 difference ${overlapDiff}`,
  `- home cell alone would find ${homeOnly} of ${real.size} pairs (${(100 * (1 - homeOnly / real.size)).toFixed(1)} % missed)`,
  `- bulk load of ${bulk.length} in batches of 1,000: real trigger ${(bulk.length / realBulkMs * 1000).toFixed(0)} sources/s, cell-local ${(bulk.length / simBulkMs * 1000).toFixed(0)} sources/s`,
  `- one write at a time (${SINGLE}): real median ${pct(realSingle, 0.5).toFixed(2)} ms (p99 ${pct(realSingle, 0.99).toFixed(2)}), cell-local median ${pct(simSingle, 0.5).toFixed(2)} ms (p99 ${pct(simSingle, 0.99).toFixed(2)}); cells per write: ${singleCells.filter((c) => c === 1).length} in one cell, mean ${mean(singleCells).toFixed(2)}, max ${Math.max(...singleCells)}`,
  `- bbox listings (${QUERIES}, 0.05–1.5°): equal ${listingsEqual} of ${QUERIES}, duplicates ${duplicates}; real median ${pct(realList, 0.5).toFixed(2)} ms (p99 ${pct(realList, 0.99).toFixed(2)}), cell-local median ${pct(simList, 0.5).toFixed(2)} ms (p99 ${pct(simList, 0.99).toFixed(2)}); cells per query mean ${mean(queryCells).toFixed(2)}, max ${Math.max(...queryCells)}`
]
process.stdout.write(`${lines.join('\n')}\n`)
await db.end()
process.exit(onlyInReal + onlyInSim + duplicates === 0 && listingsEqual === QUERIES ? 0 : 1)
