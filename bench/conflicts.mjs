// Conflicts at a million rows (issue "Conflicts"), in one run: BENCH_CONFLICT_ROWS grid sources
// (default 1,000,000, none overlapping) plus a dense region of 40,000 boxes of 0.0033° on a
// 0.002° grid, one period, where a new box of the same size overlaps about 10 of them.
// - single POST /sources into the dense region: the service (conflicts detected by the trigger,
//   recorded and returned) against the naive handler, whose connections turn the triggers off
//   (session_replication_role = replica) and that reads no conflicts (NAIVE_CONFLICTS=off): it checks nothing;
// - GET /sources/?id= of dense sources (about 10 conflicts each) against grid ones (none);
// - 1,000-feature POSTs into the dense region against pgbench's plain set-based INSERT of the
//   same boxes with the triggers off, and (for reference) with them on, as any SQL writer's
//   insert is held to the rule;
// - EXPLAIN (ANALYZE) of the trigger's lookup for one new box and of one GET's conflict list.
// Sources posted by a round are deleted before the next, so the density stays what it was.
// Prints Markdown. Usage: npm run build && node bench/conflicts.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'

const ROWS = Number(process.env.BENCH_CONFLICT_ROWS ?? 1_000_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const CONNECTIONS = 16
const DENSE = { x: 40, y: 0, side: 200, step: 0.002, size: 0.0033 }
const REGION = [DENSE.x, DENSE.y, DENSE.x + DENSE.side * DENSE.step, DENSE.y + DENSE.side * DENSE.step, DENSE.size]
const log = (m) => process.stderr.write(`[conflicts] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, env, db, seed, accountId } = await benchDatabase(log)
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE id LIKE 'src_0%'`)).rows[0].n) !== ROWS) {
  await seed(1, ROWS)
}
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE id LIKE 'src_dense%'`)).rows[0].n) !== DENSE.side ** 2) {
  const t0 = Date.now()
  for (let row = 0; row < DENSE.side; row += 10) {
    await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
      SELECT 'src_dense' || lpad(n::text, 17, '0'), 'dense-' || n, 'dense', $1::uuid,
        ST_MakeEnvelope($2::float8 + (n % $4::integer) * $5::float8, $3::float8 + (n / $4::integer) * $5::float8, $2::float8 + (n % $4::integer) * $5::float8 + $6::float8, $3::float8 + (n / $4::integer) * $5::float8 + $6::float8, 4326), '[2024-01-01Z,2024-02-01Z)'
      FROM generate_series($7::integer, $8::integer) AS n`, [accountId, DENSE.x, DENSE.y, DENSE.side, DENSE.step, DENSE.size, row * DENSE.side, (row + 10) * DENSE.side - 1])
  }
  log(`dense region: ${DENSE.side ** 2} sources with their conflicts in ${Date.now() - t0} ms`)
}
const cleanUp = async () => { await db.query(`DELETE FROM sources WHERE feature_id LIKE 'post-%' OR feature_id LIKE 'pgb-%'`) }
await cleanUp()
await db.query('VACUUM (ANALYZE) sources, source_conflict_pairs')
const stats = (await db.query(`SELECT avg(n)::numeric(6,2) AS mean, min(n) AS min, max(n) AS max FROM (
  SELECT count(p.other_id) AS n FROM sources s LEFT JOIN source_conflict_pairs p ON p.source_id = s.id
  WHERE s.id LIKE 'src_dense%' AND (s.geom && ST_MakeEnvelope(${DENSE.x + 0.02}, ${DENSE.y + 0.02}, ${DENSE.x + 0.38}, ${DENSE.y + 0.38}, 4326)) GROUP BY s.id) c`)).rows[0]
log(`conflicts per dense source away from the edge: mean ${stats.mean}, ${stats.min}–${stats.max}`)

async function startProcess (args, extraEnv, readyPath) {
  const port = await freePort()
  const child = spawn(process.execPath, args, { env: { ...env, ...extraEnv, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] })
  process.on('exit', () => child.kill())
  for (let i = 0; i < 200; i++) { try { if ((await fetch(`http://127.0.0.1:${port}${readyPath}`)).status < 500) break } catch {} await sleep(100) }
  return `http://127.0.0.1:${port}`
}
const service = await startProcess(SERVICE_ARGS,
  { NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, '/ready')
const naive = await startProcess(['bench/naive-server.mjs'],
  { ORG: 'bench', ACCOUNT_ID: accountId, NAIVE_PG_OPTIONS: '-c session_replication_role=replica', NAIVE_CONFLICTS: 'off' }, '/sources?id=x')
const token = (await (await fetch(`${service}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token

let tag = 0
function load (target, scenario) {
  const s = { url: target, connections: CONNECTIONS, token, runTag: `post-${process.pid}-${tag++}`, ...scenario }
  if (s.amount === undefined) s.duration = DURATION
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  log(`${target === service ? 'service' : 'naive'} ${scenario.kind}${scenario.features ? ` ×${scenario.features}` : ''}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, status ${JSON.stringify(r.statusCodes)}, errors ${r.errors}`)
  if (r.errors > 0 || Object.keys(r.statusCodes).some((c) => c >= 300 && c !== '404')) throw new Error(`failed requests: ${JSON.stringify(r.statusCodes)}`)
  return r
}
const out = [`Machine: ${(await import('node:os')).cpus().length} cores; ${ROWS.toLocaleString('en')} grid sources + ${(DENSE.side ** 2).toLocaleString('en')} in the dense region; conflicts per dense source ${stats.mean} on average (${stats.min}–${stats.max}); ${CONNECTIONS} connections, ${RUNS} interleaved rounds of ${DURATION} s, medians.`, '']

// A posted box in the dense region: how many conflicts it gets (checked on one sample).
const sample = await (await fetch(`${service}/sources?dry_run=true`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'FeatureCollection', features: Array.from({ length: 200 }, (_, i) => ({ type: 'Feature', id: `post-sample-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: [[[40.1 + i * 0.0011, 0.2], [40.1033 + i * 0.0011, 0.2], [40.1033 + i * 0.0011, 0.2033], [40.1 + i * 0.0011, 0.2033], [40.1 + i * 0.0011, 0.2]]] } })) }) })).json()
const perPost = sample.sources.map((s) => s.conflicts.filter((c) => c.id !== undefined).length)
out.push(`A new box in the dense region conflicts with ${(perPost.reduce((a, b) => a + b, 0) / perPost.length).toFixed(1)} registered sources on average (dry run of 200 boxes).`, '')

// 1. Single POST.
log('single POST')
const post1 = { kind: 'post', region: REGION, features: 1 }
load(service, post1); load(naive, post1); await cleanUp()
const svcPost = []; const naivePost = []
for (let i = 0; i < RUNS; i++) {
  svcPost.push(load(service, post1)); await cleanUp()
  naivePost.push(load(naive, post1)); await cleanUp()
}

// 2. GET of a source with ~10 conflicts and of one with none.
log('GET')
const denseIds = Array.from({ length: 500 }, () => {
  const c = 10 + Math.floor(Math.random() * (DENSE.side - 20))
  const r = 10 + Math.floor(Math.random() * (DENSE.side - 20))
  return `/sources/?id=src_dense${String(r * DENSE.side + c).padStart(17, '0')}`
})
const gridIds = Array.from({ length: 500 }, () => `/sources/?id=src_${String(1 + Math.floor(Math.random() * ROWS)).padStart(22, '0')}`)
// Grid sources are organisation 'bench' (the editor's token), dense ones 'dense': each set is
// read with a token of its own organisation.
// A database kept from an earlier run has the account already (the CLI then exits 2).
try {
  execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'dense@example.org', '--org', 'dense', '--role', 'viewer', '--password-stdin'], { env, input: PASSWORD, stdio: ['pipe', 'ignore', 'ignore'] })
} catch (err) {
  if (err.status !== 2) throw err
}
const denseToken = (await (await fetch(`${service}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'dense@example.org', password: PASSWORD }) })).json()).token
load(service, { kind: 'paths', paths: denseIds, token: denseToken }); load(service, { kind: 'paths', paths: gridIds })
const getDense = []; const getNone = []
for (let i = 0; i < RUNS; i++) {
  getNone.push(load(service, { kind: 'paths', paths: gridIds }))
  getDense.push(load(service, { kind: 'paths', paths: denseIds, token: denseToken }))
}
const denseBody = await (await fetch(`${service}${denseIds[0]}`, { headers: { authorization: `Bearer ${denseToken}` } })).json()

// 3. 1,000-feature POSTs against pgbench's plain INSERT of 1,000 such boxes (triggers off).
log('1,000-feature POST')
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const pgDir = tempDir('bench-conflicts-')
const pgFile = join(pgDir, 'insert.sql')
writeFileSync(pgFile, `INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
SELECT 'src_' || md5(random()::text), 'pgb-' || md5(random()::text), 'bench', '${accountId}'::uuid, ST_MakeEnvelope(x, y, x + ${DENSE.size}, y + ${DENSE.size}, 4326), '[2024-01-01Z,2024-02-01Z)'
FROM (SELECT ${REGION[0]} + random() * ${REGION[2] - REGION[0] - DENSE.size} AS x, ${REGION[1]} + random() * ${REGION[3] - REGION[1] - DENSE.size} AS y FROM generate_series(1, 1000)) AS r;
`)
function pgbench ({ triggers = false } = {}) {
  const started = performance.now()
  const r = spawnSync(pgbenchBin, ['-n', '-c', String(BULK_CONNECTIONS), '-j', '2', '-t', '4', '-f', pgFile, url], { encoding: 'utf8', env: { ...process.env, ...(triggers ? {} : { PGOPTIONS: '-c session_replication_role=replica' }) } })
  if (r.status !== 0) throw new Error(`pgbench: ${r.stderr}`)
  const seconds = (performance.now() - started) / 1000
  return BULK_CONNECTIONS * 4 * 1000 / seconds
}
// 4 at once, 16 requests each way: in one region they run one after the other (their areas
// overlap), and 16 at once would wait past the load generator's 10 s timeout.
const BULK_CONNECTIONS = 4
const post1000 = { kind: 'post', region: REGION, features: 1000, amount: 16, connections: BULK_CONNECTIONS }
const svcBulk = []; const pgBulk = []; const pgRuleBulk = []
for (let i = 0; i < RUNS; i++) {
  svcBulk.push(load(service, post1000).rps * 1000); await cleanUp()
  pgBulk.push(pgbench()); await cleanUp()
  pgRuleBulk.push(pgbench({ triggers: true })); await cleanUp()
  log(`1,000-feature round ${i + 1}: service ${Math.round(svcBulk[i])}, pgbench ${Math.round(pgBulk[i])} (triggers off), ${Math.round(pgRuleBulk[i])} (on) polygons/s`)
}

// 4. The plans.
const explain = async (text, params) => (await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, params)).rows.map((r) => r['QUERY PLAN']).join('\n')
const lookupPlan = await explain(`SELECT o.id, lonlat_conflict_overlap_m2(n.geom, o.geom, sources_conflict_tolerance_m()) AS overlap_m2
  FROM (SELECT ST_MakeEnvelope(40.2001, 0.2001, 40.2034, 0.2034, 4326) AS geom, tstzrange('2024-01-01Z', '2024-02-01Z') AS period) AS n
  JOIN sources AS o ON o.geom && n.geom AND o.period && n.period`)
const readPlan = await explain(`SELECT p.other_id, p.overlap_m2, p.overlap_ratio, p.overlap_period FROM source_conflict_pairs AS p
  WHERE p.source_id = $1 ORDER BY p.overlap_m2 DESC, p.other_id LIMIT 101`, [denseIds[0].split('=')[1]])

const mean = (rs, f) => median(rs.map(f))
out.push('| scenario | service | baseline | ratio | target |', '|---|---|---|---|---|')
const sp = mean(svcPost, (r) => r.rps); const np = mean(naivePost, (r) => r.rps)
out.push(`| single POST /sources into the dense region (req/s; p50 ms) | ${Math.round(sp)}; ${mean(svcPost, (r) => r.p50)} | naive handler, no detection: ${Math.round(np)}; ${mean(naivePost, (r) => r.p50)} | ${(sp / np).toFixed(2)}× | ≥ 0.9× |`)
const gd = mean(getDense, (r) => r.rps); const gn = mean(getNone, (r) => r.rps)
out.push(`| GET /sources/?id= with ${denseBody.properties.conflicts.length} conflicts (req/s; p50 ms; mean latency = ${CONNECTIONS}/rate) | ${Math.round(gd)}; ${mean(getDense, (r) => r.p50)} | with none: ${Math.round(gn)}; ${mean(getNone, (r) => r.p50)} | latency ${(gn / gd).toFixed(2)}× | ≤ 1.5× |`)
const sb = median(svcBulk); const pb = median(pgBulk)
out.push(`| 1,000-feature POST into the dense region, ${BULK_CONNECTIONS} at once (polygons/s) | ${Math.round(sb).toLocaleString('en')} | pgbench plain INSERT, triggers off: ${Math.round(pb).toLocaleString('en')} | ${(sb / pb).toFixed(2)}× | ≥ 0.7× |`)
const pr = median(pgRuleBulk)
out.push(`| the same (reference) | ${Math.round(sb).toLocaleString('en')} | pgbench plain INSERT, triggers on (the rule, as every SQL writer gets it): ${Math.round(pr).toLocaleString('en')} | ${(sb / pr).toFixed(2)}× | — |`)
out.push('', 'The trigger\'s lookup for one new box (the GiST indexes on geom and period):', '', '```', lookupPlan, '```', '', 'One GET\'s conflict list:', '', '```', readPlan, '```')
process.stdout.write(out.join('\n') + '\n')
process.exit(0)
