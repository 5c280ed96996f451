// `make bench`: the service against its two baselines, in one run, on one database and machine.
// Starts a throwaway PostGIS, migrates it and seeds accounts with the CLI, starts the service in
// production mode (server backend, NODE_ENV=production, LOG_LEVEL=warn) and the naive handler,
// drives each with autocannon from a separate process (-p 1, 16 connections, fixed duration,
// a warm-up run first, median of BENCH_RUNS runs with min–max), runs pgbench (-M prepared, 16
// clients) on the same statements, and writes bench/RESULTS.md and bench/raw/<date>.json.
// Env: BENCH_DURATION (s, default 5), BENCH_RUNS (default 3), BENCH_SCALE_ROWS (default 1000000).
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync, readFileSync, mkdtempSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { createServer } from 'node:net'
import pg from 'pg'
import { startPostgis } from '../scripts/postgis.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const SCALE_ROWS = Number(process.env.BENCH_SCALE_ROWS ?? 1_000_000)
const CONNECTIONS = 16
const GET_ROWS = 10_000
const PASSWORD = 'bench password 1234'
const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-48bytes!!'
const log = (m) => process.stderr.write(`[bench] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function freePort () {
  return new Promise((resolve) => {
    const s = createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) })
  })
}

const cluster = await startPostgis({ log })
process.on('exit', () => cluster.stop())
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
const url = cluster.url.replace(/\/postgres$/, '/bench')
const admin = new pg.Client({ connectionString: cluster.url }); await admin.connect()
await admin.query('CREATE DATABASE bench'); await admin.end()
const env = { ...process.env, DATABASE_URL: url }
delete env.DATA_DIR
execFileSync(process.execPath, ['dist/cli.js', 'migrate'], { env, stdio: 'inherit' })
execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'bench@example.org', '--org', 'bench', '--role', 'editor', '--password-stdin'], { env, input: PASSWORD, stdio: ['pipe', 'inherit', 'inherit'] })
const db = new pg.Client({ connectionString: url }); await db.connect()
const accountId = (await db.query(`SELECT id FROM accounts WHERE email = 'bench@example.org'`)).rows[0].id

// Seeded ids are src_ + the row number padded to 22 digits (valid base62), so pgbench and the
// load generator can pick existing rows without a lookup.
async function seed (from, count) {
  const t0 = Date.now()
  for (let start = from; start < from + count; start += 100_000) {
    const end = Math.min(start + 100_000, from + count) - 1
    await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
      SELECT 'src_' || lpad(n::text, 22, '0'), 'seed-' || n, 'bench', $3::uuid,
        ST_MakeEnvelope((n % 3000) * 0.01 - 15, (n / 3000 % 3000) * 0.01 - 15, (n % 3000) * 0.01 - 14.995, (n / 3000 % 3000) * 0.01 - 14.995, 4326),
        '[2024-01-01Z,2024-02-01Z)'
      FROM generate_series($1::bigint, $2::bigint) AS n`, [start, end, accountId])
  }
  await db.query('ANALYZE sources')
  log(`seeded ${count} rows from ${from} in ${Date.now() - t0} ms`)
}
const rowCount = async () => Number((await db.query('SELECT count(*) FROM sources')).rows[0].count)

async function startProcess (args, extraEnv, port) {
  const child = spawn(process.execPath, args, { env: { ...env, ...extraEnv, PORT: String(port) }, stdio: ['ignore', 'inherit', 'inherit'] })
  for (let i = 0; i < 200; i++) {
    try { const r = await fetch(`http://127.0.0.1:${port}/${extraEnv.READY_PATH ?? 'ready'}`); if (r.status < 500) return child } catch {}
    await sleep(100)
  }
  throw new Error(`${args.join(' ')} did not start`)
}

const servicePort = await freePort()
const service = await startProcess(['dist/server.js'], {
  NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', LOGIN_MAX_FAILURES: '1000000000'
}, servicePort)
const naivePort = await freePort()
const naive = await startProcess(['bench/naive-server.mjs'], { ORG: 'bench', ACCOUNT_ID: accountId, READY_PATH: 'sources?id=x' }, naivePort)
process.on('exit', () => { service.kill(); naive.kill() })

const token = (await (await fetch(`http://127.0.0.1:${servicePort}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token

let peakRssKb = 0
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
const sampler = setInterval(() => { try { peakRssKb = Math.max(peakRssKb, rssOf(service.pid)) } catch {} }, 200)

let deleteCursor = 2_000_000_000
const runTag = Date.now().toString(36)
function load (target, scenario, duration) {
  const port = target === 'service' ? servicePort : naivePort
  const s = { url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration, token, email: 'bench@example.org', password: PASSWORD, getRows: GET_ROWS, deleteFrom: deleteCursor, runTag: `${runTag}-${target}-${Math.random().toString(36).slice(2, 8)}`, ...scenario }
  const out = execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  const r = JSON.parse(out)
  if (scenario.kind === 'delete' || scenario.kind === 'mixed') deleteCursor += r.total + 1000
  return r
}

async function measure (target, name, scenario) {
  log(`${target}: ${name} (warm-up, then ${RUNS} × ${DURATION} s)`)
  load(target, scenario, Math.max(2, Math.round(DURATION / 2)))
  const runs = []
  for (let i = 0; i < RUNS; i++) runs.push(load(target, scenario, DURATION))
  const stat = (k) => ({ median: median(runs.map((r) => r[k])), min: Math.min(...runs.map((r) => r[k])), max: Math.max(...runs.map((r) => r[k])) })
  return { target, name, rps: stat('rps'), p50: stat('p50'), p99: stat('p99'), errors: runs.reduce((a, r) => a + r.errors + r.timeouts + r.non2xx, 0), runs }
}

// Delete targets: each DELETE request removes a different seeded row above the GET range.
const deleteRowsNeeded = Number(process.env.BENCH_DELETE_ROWS ?? 300_000)
await seed(1, GET_ROWS)
await seed(deleteCursor, deleteRowsNeeded)

const results = []
const scenarios = [
  ['POST /token', { kind: 'token' }],
  ['GET /sources/?id=', { kind: 'get' }],
  ['POST /sources (1 feature)', { kind: 'post', features: 1, vertices: 5 }],
  ['POST /sources (1,000 features)', { kind: 'post', features: 1000, vertices: 5 }],
  ['DELETE /sources/?id=', { kind: 'delete' }],
  ['mixed 80% GET / 15% POST / 5% DELETE', { kind: 'mixed', features: 1, vertices: 5 }]
]
for (const [name, scenario] of scenarios) {
  results.push(await measure('service', name, scenario))
  if (scenario.kind !== 'token') results.push(await measure('naive', name, scenario))
}

// pgbench on the same statements. Ids: seeded rows for GET; fresh unique ones for inserts.
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const pgdir = mkdtempSync(join(tmpdir(), 'bench-pgbench-'))
// pgbench reads ":MI" and ":SS" inside literals as its variables, so the service's
// 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"' is spelled with chr(58) for ':' (a constant, folded at plan time).
const iso = `('YYYY-MM-DD"T"HH24' || chr(58) || 'MI' || chr(58) || 'SS.US"Z"')`
const square = '0103000020E610000001000000050000000000000000002440000000000000494000000000000026400000000000004940000000000000264000000000008049400000000000002440000000000080494000000000000024400000000000004940'
const scripts = {
  'GET /sources/?id=': `\\set n random(1, ${GET_ROWS})
select "id", "feature_id", "organisation", ST_AsGeoJSON("geom", 15) as "geometry", to_char(lower("period") AT TIME ZONE 'UTC', ${iso}) as "start_at", to_char(upper("period") AT TIME ZONE 'UTC', ${iso}) as "end_at", to_char("created_at" AT TIME ZONE 'UTC', ${iso}) as "created_at", ST_Area("geom"::geography) as "area_m2" from "sources" where "id" = 'src_' || lpad(CAST(:n AS text), 22, '0') and "organisation" = 'bench';
`,
  'POST /sources (1 feature)': `\\set n random(1, 1000000000000000)
INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) SELECT t.id, t.feature_id, 'bench', '${accountId}'::uuid, t.geom::geometry, tstzrange(t.start_at, t.end_at, '[)') FROM unnest(ARRAY['src_p' || lpad(CAST(:n AS text), 21, '0')]::text[], ARRAY['pg-' || CAST(:n AS text)]::text[], ARRAY['${square}']::text[], ARRAY['2024-01-01T00:00:00.000000Z']::timestamptz[], ARRAY['2024-02-01T00:00:00.000000Z']::timestamptz[]) WITH ORDINALITY AS t(id, feature_id, geom, start_at, end_at, ord);
`,
  'POST /sources (1,000 features)': `\\set n random(1, 1000000000000)
INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) SELECT 'src_q' || lpad(CAST(CAST(:n AS bigint) * 1000 + t.ord AS text), 21, '0'), 'pgq-' || CAST(:n AS text) || '-' || t.ord, 'bench', '${accountId}'::uuid, t.geom::geometry, tstzrange(t.start_at, t.end_at, '[)') FROM unnest(ARRAY[${Array.from({ length: 1000 }, () => `'${square}'`).join(',')}]::text[], array_fill('2024-01-01T00:00:00.000000Z'::timestamptz, ARRAY[1000]), array_fill('2024-02-01T00:00:00.000000Z'::timestamptz, ARRAY[1000])) WITH ORDINALITY AS t(geom, start_at, end_at, ord);
`
}
function pgbench (name) {
  const file = join(pgdir, `${name.replace(/\W+/g, '_')}.sql`)
  writeFileSync(file, scripts[name])
  const runOnce = (seconds) => {
    const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', String(CONNECTIONS), '-j', '2', '-T', String(seconds), '-f', file, url], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`pgbench failed: ${r.stderr}`)
    return { tps: Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1]), latencyMs: Number(/latency average = ([\d.]+) ms/.exec(r.stdout)?.[1]), failed: Number(/number of failed transactions: (\d+)/.exec(r.stdout)?.[1] ?? 0) }
  }
  log(`pgbench: ${name}`)
  runOnce(Math.max(2, Math.round(DURATION / 2)))
  const runs = Array.from({ length: RUNS }, () => runOnce(DURATION))
  return { name, tps: { median: median(runs.map((r) => r.tps)), min: Math.min(...runs.map((r) => r.tps)), max: Math.max(...runs.map((r) => r.tps)) }, latencyMs: median(runs.map((r) => r.latencyMs)), failed: runs.reduce((a, r) => a + r.failed, 0), runs }
}
const pgbenchResults = Object.keys(scripts).map(pgbench)

// Half of peak load: GET and single POST at half the measured service req/s.
const halfLoad = []
for (const name of ['GET /sources/?id=', 'POST /sources (1 feature)']) {
  const peak = results.find((r) => r.target === 'service' && r.name === name).rps.median
  const scenario = scenarios.find(([n]) => n === name)[1]
  halfLoad.push(await measure('service', `${name} at ${Math.round(peak / 2)} req/s (half of peak)`, { ...scenario, rate: Math.round(peak / 2) }))
}

// DELETE at a given table size: a fixed number of deletes per run, on rows seeded just before.
const SCALED_DELETES = 3000
let scaledBase = 4_000_000_000
async function scaledDelete () {
  deleteCursor = scaledBase
  scaledBase += 1_000_000
  await seed(deleteCursor, (SCALED_DELETES + 1000) * (RUNS + 1))
  return measure('service', `DELETE at ${await rowCount()} rows`, { kind: 'delete', amount: SCALED_DELETES })
}

// Scaling: polygon size, then table size.
const scaling = []
for (const vertices of [5, 500, 5000]) scaling.push(await measure('service', `POST 1 feature, ${vertices} vertices`, { kind: 'post', features: 1, vertices }))
// Table size: start again from the 10k GET rows alone, then grow the table to SCALE_ROWS.
await db.query('TRUNCATE sources')
await seed(1, GET_ROWS)
scaling.push({ ...(await measure('service', `GET at ${await rowCount()} rows`, { kind: 'get' })) })
scaling.push(await scaledDelete())
await seed(3_000_000_000, Math.max(0, SCALE_ROWS - await rowCount()))
scaling.push({ ...(await measure('service', `GET at ${await rowCount()} rows`, { kind: 'get' })) })
scaling.push(await scaledDelete())
clearInterval(sampler)
const vmhwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${service.pid}/status`, 'utf8'))?.[1] ?? 0)

// Report.
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
const date = new Date().toISOString()
const f0 = (x) => Math.round(x).toLocaleString('en-US')
const f1 = (x) => x.toFixed(1)
const byName = (target, name) => results.find((r) => r.target === target && r.name === name)
const pgb = (name) => pgbenchResults.find((r) => r.name === name)
const rows = []
for (const [name, scenario] of scenarios) {
  const s = byName('service', name); const n = byName('naive', name); const p = pgb(name)
  const unit = scenario.features === 1000 ? 1000 : 1
  const ratioN = n ? `${(s.rps.median / n.rps.median).toFixed(2)}×` : '—'
  const ratioP = p ? `${(s.rps.median * unit / (p.tps.median * unit)).toFixed(2)}×` : '—'
  rows.push(`| ${name} | ${f0(s.rps.median * unit)} (${f0(s.rps.min * unit)}–${f0(s.rps.max * unit)})${unit > 1 ? ' polygons/s' : ''} | ${f1(s.p50.median)} / ${f1(s.p99.median)} | ${s.errors} | ${n ? `${f0(n.rps.median * unit)} (errors ${n.errors})` : '—'} | ${p ? f0(p.tps.median * unit) : '—'} | ${ratioN} | ${ratioP} |`)
}
const md = `# Benchmark results

- Date: ${date}; commit ${commit}
- Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; load generator, service, naive handler and PostGIS share it.
- Command: \`make bench\` (= \`node bench/run.mjs\`), BENCH_DURATION=${DURATION} s, BENCH_RUNS=${RUNS}, ${CONNECTIONS} connections, pipelining 1, a warm-up run before each measured set.
- Service: \`node dist/server.js\`, NODE_ENV=production, LOG_LEVEL=warn, server backend, pool 10, full validation, auth and rate limiting (limit set high enough not to trigger).
- Naive handler: \`bench/naive-server.mjs\` (Fastify + pg, same SQL, no validation, auth or rate limits).
- Raw SQL: pgbench -M prepared -c ${CONNECTIONS} -j 2 -T ${DURATION}, same statements (bench/run.mjs \`scripts\`).
- Figures: median of ${RUNS} runs (min–max); latency p50 / p99 in ms from autocannon.

## Service against its baselines

| scenario | service req/s (min–max) | p50 / p99 ms | errors | naive req/s | pgbench tps | × naive | × pgbench |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}

Peak RSS of the service: ${f0(peakRssKb / 1024)} MB sampled under load (VmHWM ${f0(vmhwm / 1024)} MB).

## Latency at half of peak load

| scenario | achieved req/s | p50 / p99 ms | errors |
|---|---|---|---|
${halfLoad.map((r) => `| ${r.name} | ${f0(r.rps.median)} | ${f1(r.p50.median)} / ${f1(r.p99.median)} | ${r.errors} |`).join('\n')}

## Scaling

| scenario | req/s (min–max) | p50 / p99 ms | errors |
|---|---|---|---|
${scaling.map((r) => `| ${r.name} | ${f0(r.rps.median)} (${f0(r.rps.min)}–${f0(r.rps.max)}) | ${f1(r.p50.median)} / ${f1(r.p99.median)} | ${r.errors} |`).join('\n')}

## pgbench detail

| statement | tps (min–max) | latency avg ms | failed |
|---|---|---|---|
${pgbenchResults.map((r) => `| ${r.name} | ${f0(r.tps.median)} (${f0(r.tps.min)}–${f0(r.tps.max)}) | ${f1(r.latencyMs)} | ${r.failed} |`).join('\n')}
`
mkdirSync('bench/raw', { recursive: true })
const stamp = date.replace(/[:.]/g, '-')
writeFileSync(`bench/raw/${stamp}.json`, JSON.stringify({ date, commit, results, pgbenchResults, halfLoad, scaling, peakRssKb, vmhwm }, null, 2))
const notes = (() => { try { return readFileSync('bench/NOTES.md', 'utf8') } catch { return '' } })()
writeFileSync('bench/RESULTS.md', md + (notes ? `\n${notes}` : ''))
log(`wrote bench/RESULTS.md and bench/raw/${stamp}.json`)
await db.end()
process.exit(0)
