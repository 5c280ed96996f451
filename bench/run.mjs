// `make bench`: the service against its two baselines, in one run, on one database and machine.
// Starts a throwaway PostGIS, migrates it and seeds accounts with the CLI, starts the service in
// production mode (server backend, NODE_ENV=production, LOG_LEVEL=warn) and the naive handler,
// drives each with autocannon from a separate process (-p 1, 16 connections, fixed duration,
// a warm-up run first, median of BENCH_RUNS runs with min–max), runs pgbench (-M prepared, 16
// clients) on the same statements, and writes bench/raw/<date>.json and the top of bench/RESULTS.md
// (up to its mark; what follows the mark is kept).
// Env: BENCH_DURATION (s, default 5), BENCH_RUNS (default 3), BENCH_SCALE_ROWS (default 1000000).
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync, readFileSync, mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'
import { conflictsOf, insertFrom, iso } from './pgbench-statements.mjs'
import { placedPolygon, placement } from './bodies.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const SCALE_ROWS = Number(process.env.BENCH_SCALE_ROWS ?? 1_000_000)
const CONNECTIONS = 16
const GET_ROWS = 10_000
// A 1,000-feature insert takes seconds when 16 run at once, so a 5 s run completes one or two per
// connection and its rate is mostly rounding. Each run of it is instead a fixed number of
// requests (autocannon amount, pgbench -t per client), timed to the last answer.
const BULK_REQUESTS = 4 * CONNECTIONS
const log = (m) => process.stderr.write(`[bench] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// Everything here shares the cores: a machine already busy when the run starts skews every figure.
const idleLoad = loadavg()[0]
if (idleLoad > 0.5) log(`warning: load average ${idleLoad.toFixed(2)} before the run; other work on this machine will skew the figures`)
const { url, env, db, accountId, seed } = await benchDatabase(log)

// Before each measured set, for the service and its baselines alike: dead rows of the previous
// scenario vacuumed, statistics fresh, dirty pages written, so neither autovacuum nor a checkpoint
// lands in the middle of one target's runs and not the other's.
async function settleDatabase () {
  await db.query('VACUUM (ANALYZE) sources')
  await db.query('CHECKPOINT')
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

// The service runs exactly as `npm start` runs it (same node flags).
const startArgs = SERVICE_ARGS
const servicePort = await freePort()
const service = await startProcess(startArgs, {
  NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', LOGIN_MAX_FAILURES: '1000000000'
}, servicePort)
const naivePort = await freePort()
const naive = await startProcess(['bench/naive-server.mjs'], { ORG: 'bench', ACCOUNT_ID: accountId, READY_PATH: 'sources?id=x' }, naivePort)
const floorPort = await freePort()
const floor = await startProcess(['bench/floor-server.mjs'], { READY_PATH: '' }, floorPort)
process.on('exit', () => { service.kill(); naive.kill(); floor.kill() })

const token = (await (await fetch(`http://127.0.0.1:${servicePort}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token

// Peak RSS from the kernel: VmHWM, the process's high-water mark, reset before each measured set
// by writing 5 to /proc/<pid>/clear_refs (Linux ≥ 4.0). Exact, where sampling would miss the
// peaks (and a timer in this process cannot run while a load run blocks it).
let peakRssKb = 0
let peakPid
const hwmOf = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
const resetPeak = (pid) => writeFileSync(`/proc/${pid}/clear_refs`, '5')

let deleteCursor = 2_000_000_000
let embeddedPort, embeddedToken
const runTag = Date.now().toString(36)
function load (target, scenario, duration) {
  const port = { service: servicePort, embedded: embeddedPort, naive: naivePort, floor: floorPort }[target]
  const s = { url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration, token: target === 'embedded' ? embeddedToken : token, email: 'bench@example.org', password: PASSWORD, getRows: GET_ROWS, deleteFrom: deleteCursor, runTag: `${runTag}-${target}-${Math.random().toString(36).slice(2, 8)}`, ...scenario }
  const out = execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  const r = JSON.parse(out)
  deleteCursor += r.deletes
  return r
}

async function measure (target, name, scenario) {
  log(`${target}: ${name} (warm-up, then ${RUNS} × ${DURATION} s)`)
  if (target !== 'embedded' && target !== 'floor') await settleDatabase()
  // The process whose memory is reported: the service (server or embedded), not a baseline.
  const pid = target === 'service' ? service.pid : target === 'embedded' ? peakPid : undefined
  if (pid !== undefined) resetPeak(pid)
  load(target, scenario, Math.max(2, Math.round(DURATION / 2)))
  const runs = []
  for (let i = 0; i < RUNS; i++) runs.push(load(target, scenario, DURATION))
  const stat = (k) => ({ median: median(runs.map((r) => r[k])), min: Math.min(...runs.map((r) => r[k])), max: Math.max(...runs.map((r) => r[k])) })
  const peakRssMb = pid === undefined ? null : hwmOf(pid) / 1024
  if (target === 'service') peakRssKb = Math.max(peakRssKb, hwmOf(pid))
  const paced = scenario.paced ? { lateP99: stat('lateP99'), waitP99: stat('waitP99') } : {}
  return { target, name, rps: stat('rps'), p50: stat('p50'), p99: stat('p99'), ...paced, errors: runs.reduce((a, r) => a + r.errors + r.timeouts + r.non2xx, 0), peakRssMb, runs }
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
  ['POST /sources (1,000 features)', { kind: 'post', features: 1000, vertices: 5, amount: BULK_REQUESTS }],
  ['DELETE /sources/?id=', { kind: 'delete' }],
  ['mixed 80% GET / 15% POST / 5% DELETE', { kind: 'mixed', features: 1, vertices: 5 }]
]
for (const [name, scenario] of scenarios) {
  results.push(await measure('service', name, scenario))
  if (scenario.kind !== 'token') results.push(await measure('naive', name, scenario))
}

// pgbench on the same statements. Ids: seeded rows for GET; fresh unique ones for inserts.
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const pgdir = tempDir('bench-pgbench-')
const scripts = {
  'GET /sources/?id=': `\\set n random(1, ${GET_ROWS})
select "id", "feature_id", "organisation", ST_AsGeoJSON("geom", 15) as "geometry", to_char(lower("period") AT TIME ZONE 'UTC', ${iso}) as "start_at", to_char(upper("period") AT TIME ZONE 'UTC', ${iso}) as "end_at", to_char("created_at" AT TIME ZONE 'UTC', ${iso}) as "created_at", "area_m2", ${conflictsOf('s.id')} from "sources" as s where "id" = 'src_' || lpad(CAST(:n AS text), 22, '0') and "organisation" = 'bench';
`,
  'POST /sources (1 feature)': insertFrom(1, 'p', accountId),
  'POST /sources (1,000 features)': insertFrom(1000, 'q', accountId)
}
async function pgbench (name) {
  const file = join(pgdir, `${name.replace(/\W+/g, '_')}.sql`)
  writeFileSync(file, scripts[name])
  const bulk = name.includes('1,000')
  const runOnce = (seconds, warmUp = false) => {
    const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', String(CONNECTIONS), '-j', '2', ...(bulk ? ['-t', String(warmUp ? 1 : BULK_REQUESTS / CONNECTIONS)] : ['-T', String(seconds)]), '-f', file, url], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`pgbench failed: ${r.stderr}`)
    return { tps: Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1]), latencyMs: Number(/latency average = ([\d.]+) ms/.exec(r.stdout)?.[1]), failed: Number(/number of failed transactions: (\d+)/.exec(r.stdout)?.[1] ?? 0) }
  }
  log(`pgbench: ${name}`)
  await settleDatabase()
  runOnce(Math.max(2, Math.round(DURATION / 2)), true)
  const runs = Array.from({ length: RUNS }, () => runOnce(DURATION))
  return { name, tps: { median: median(runs.map((r) => r.tps)), min: Math.min(...runs.map((r) => r.tps)), max: Math.max(...runs.map((r) => r.tps)) }, latencyMs: median(runs.map((r) => r.latencyMs)), failed: runs.reduce((a, r) => a + r.failed, 0), runs }
}
const pgbenchResults = []
for (const name of Object.keys(scripts)) pgbenchResults.push(await pgbench(name))

// Half of peak load: GET and single POST at half the measured service req/s.
const halfLoad = []
for (const name of ['GET /sources/?id=', 'POST /sources (1 feature)']) {
  const peak = results.find((r) => r.target === 'service' && r.name === name).rps.median
  const scenario = scenarios.find(([n]) => n === name)[1]
  const rate = Math.round(peak / 2)
  halfLoad.push({ ...(await measure('service', name, { ...scenario, rate, paced: true })), rate, generator: 'paced' })
  halfLoad.push({ ...(await measure('floor', name, { ...scenario, rate, paced: true })), rate, generator: 'paced, floor server' })
  halfLoad.push({ ...(await measure('service', name, { ...scenario, rate })), rate, generator: 'autocannon' })
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
service.kill(); naive.kill(); floor.kill()

// The embedded backend (no target): the same service with DATABASE_URL unset, its PGlite data
// in a temporary directory. Accounts through the CLI before it starts; rows through the API
// (POST /sources with 1,000 features), since the in-process database has no SQL port.
const embedded = []
let embeddedPeakRssKb = 0
const EMBEDDED_DELETES = 1000
if (process.env.BENCH_EMBEDDED !== '0') {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-embedded-'))
  const embeddedEnv = { ...env, DATA_DIR: dataDir }
  delete embeddedEnv.DATABASE_URL
  const cli = (args, input) => execFileSync(process.execPath, ['dist/cli.js', ...args], { env: embeddedEnv, input, stdio: ['pipe', 'inherit', 'inherit'] })
  cli(['migrate'])
  cli(['account', 'add', '--email', 'bench@example.org', '--org', 'bench', '--role', 'editor', '--password-stdin'], PASSWORD)
  embeddedPort = await freePort()
  const child = spawn(process.execPath, startArgs, { env: { ...embeddedEnv, PORT: String(embeddedPort), NODE_ENV: 'production', LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 'inherit', 'inherit'] })
  process.on('exit', () => { child.kill(); rmSync(dataDir, { recursive: true, force: true }) })
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(`http://127.0.0.1:${embeddedPort}/ready`)).ok) break } catch {}
    await sleep(100)
  }
  embeddedToken = (await (await fetch(`http://127.0.0.1:${embeddedPort}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
  peakPid = child.pid
  // GET_ROWS rows to read, then enough to delete: every DELETE run is a fixed number of requests.
  const deleteScenario = { kind: 'delete', amount: EMBEDDED_DELETES }
  const seedIds = []
  const t0 = Date.now()
  const toSeed = GET_ROWS + EMBEDDED_DELETES * (RUNS + 1) + 5_000
  for (let batch = 0; seedIds.length < toSeed; batch++) {
    const place = placement(1000)
    const features = Array.from({ length: 1000 }, (_, i) => ({ type: 'Feature', id: `seed-${batch}-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: placedPolygon(5, i, place) } }))
    const r = await fetch(`http://127.0.0.1:${embeddedPort}/sources`, { method: 'POST', headers: { authorization: `Bearer ${embeddedToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'FeatureCollection', features }) })
    if (r.status !== 201) throw new Error(`embedded seeding: ${r.status} ${await r.text()}`)
    seedIds.push(...(await r.json()).sources.map((x) => x.id))
  }
  log(`embedded: seeded ${seedIds.length} rows through the API in ${Date.now() - t0} ms`)
  const idsFile = join(dataDir, 'ids.json')
  writeFileSync(idsFile, JSON.stringify(seedIds))
  deleteCursor = GET_ROWS
  for (const [name, scenario] of scenarios) {
    if (scenario.kind === 'token') continue
    embedded.push(await measure('embedded', name, { ...(scenario.kind === 'delete' ? deleteScenario : scenario), idsFile }))
  }
  embeddedPeakRssKb = Math.max(...embedded.map((r) => r.peakRssMb * 1024))
  child.kill()
}

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
  rows.push(`| ${name} | ${f0(s.rps.median * unit)} (${f0(s.rps.min * unit)}–${f0(s.rps.max * unit)})${unit > 1 ? ' polygons/s' : ''} | ${f1(s.p50.median)} / ${f1(s.p99.median)} | ${s.errors} | ${f0(s.peakRssMb)} | ${n ? `${f0(n.rps.median * unit)} (errors ${n.errors})` : '—'} | ${p ? f0(p.tps.median * unit) : '—'} | ${ratioN} | ${ratioP} |`)
}
const md = `# Benchmark results

- Date: ${date}; commit ${commit}
- Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; load generator, service, naive handler and PostGIS share it. Load average (1 min) when the run started: ${idleLoad.toFixed(2)}.
- Command: \`make bench\` (= \`node bench/run.mjs\`), BENCH_DURATION=${DURATION} s, BENCH_RUNS=${RUNS}, ${CONNECTIONS} connections, pipelining 1, a warm-up run before each measured set.
- Service: \`node ${startArgs.join(' ')}\` (as \`npm start\`), NODE_ENV=production, LOG_LEVEL=warn, server backend, default configuration (pool 10, DB_READS_IN_FLIGHT 2, DB_WRITES_IN_FLIGHT 2, LARGE_BODY_CONCURRENCY 4), full validation, auth and rate limiting (limit set high enough not to trigger).
- Naive handler: \`bench/naive-server.mjs\` (Fastify + pg, same SQL, no validation, auth or rate limits).
- Raw SQL: pgbench -M prepared -c ${CONNECTIONS} -j 2 -T ${DURATION}, same statements (bench/run.mjs \`scripts\`).
- 1,000-feature POST: each run is ${BULK_REQUESTS} requests (autocannon \`amount\`; pgbench \`-t ${BULK_REQUESTS / CONNECTIONS}\` per client), its rate timed to the last answer, since at 16 at once a request takes seconds and a ${DURATION} s run would count one or two per connection.
- Figures: median of ${RUNS} runs (min–max); latency p50 / p99 in ms from autocannon. Before each
  measured set (service, naive handler and pgbench alike): \`VACUUM (ANALYZE) sources; CHECKPOINT\`.
  Peak RSS: the service process's VmHWM over the set, warm-up included (reset through
  \`/proc/<pid>/clear_refs\` before each set).

## Service against its baselines

| scenario | service req/s (min–max) | p50 / p99 ms | errors | peak RSS MB | naive req/s | pgbench tps | × naive | × pgbench |
|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

Peak RSS of the service over all its measured sets: ${f0(peakRssKb / 1024)} MB (VmHWM).

## Latency at half of peak load

Half of the service's peak req/s above. **paced**: an open-loop load at an even rate
(\`bench/load.mjs\` \`paced\`: request k due at k / rate over up to ${CONNECTIONS} keep-alive
sockets, latency counted from when it was due). **autocannon**: its \`overallRate\`, which lets
each connection send its quota for the second back to back and then pause until the next second,
so the service sees full-speed bursts for part of every second rather than half the load.

**paced, floor server**: the same paced load against \`bench/floor-server.mjs\`, which answers at
once without a framework or database: the latency that the generator and the shared cores add on
their own. In the paced rows, *timer late p99* is how late the generator's 1 ms timer sent a
request after it was due, and *socket wait p99* how long a due request waited for one of the
${CONNECTIONS} sockets to be free (all busy with earlier requests); both are inside the p99.

| scenario | generator | target req/s | achieved req/s | p50 / p99 ms (p99 min–max) | timer late p99 ms | socket wait p99 ms | errors | peak RSS MB |
|---|---|---|---|---|---|---|---|---|
${halfLoad.map((r) => `| ${r.name} | ${r.generator} | ${f0(r.rate)} | ${f0(r.rps.median)} | ${f1(r.p50.median)} / ${f1(r.p99.median)} (${f1(r.p99.min)}–${f1(r.p99.max)}) | ${r.lateP99 ? f1(r.lateP99.median) : '—'} | ${r.waitP99 ? f1(r.waitP99.median) : '—'} | ${r.errors} | ${r.peakRssMb === null ? '—' : f0(r.peakRssMb)} |`).join('\n')}

## Scaling

| scenario | req/s (min–max) | p50 / p99 ms | errors | peak RSS MB |
|---|---|---|---|---|
${scaling.map((r) => `| ${r.name} | ${f0(r.rps.median)} (${f0(r.rps.min)}–${f0(r.rps.max)}) | ${f1(r.p50.median)} / ${f1(r.p99.median)} | ${r.errors} | ${f0(r.peakRssMb)} |`).join('\n')}

## Embedded backend (no target)

The same service with DATABASE_URL unset: PostGIS in WebAssembly (PGlite), in-process, one
query at a time. ${embedded.length === 0 ? 'Not measured in this run (BENCH_EMBEDDED=0).' : `Seeded through the API; DELETE runs are ${EMBEDDED_DELETES} requests each and 1,000-feature POST runs ${BULK_REQUESTS}, so their rate is that of a fixed batch.`}

| scenario | req/s (min–max) | p50 / p99 ms | errors | peak RSS MB | × server backend |
|---|---|---|---|---|---|
${embedded.map((r) => {
  const unit = r.name.includes('1,000') ? 1000 : 1
  const server = byName('service', r.name)
  return `| ${r.name} | ${f0(r.rps.median * unit)} (${f0(r.rps.min * unit)}–${f0(r.rps.max * unit)})${unit > 1 ? ' polygons/s' : ''} | ${f1(r.p50.median)} / ${f1(r.p99.median)} | ${r.errors} | ${f0(r.peakRssMb)} | ${server ? `${(r.rps.median / server.rps.median).toFixed(2)}×` : '—'} |`
}).join('\n')}

${embedded.length === 0 ? '' : `Peak RSS of the embedded service over its measured sets: ${f0(embeddedPeakRssKb / 1024)} MB (VmHWM).`}

## pgbench detail

| statement | tps (min–max) | latency avg ms | failed |
|---|---|---|---|
${pgbenchResults.map((r) => `| ${r.name} | ${f0(r.tps.median)} (${f0(r.tps.min)}–${f0(r.tps.max)}) | ${f1(r.latencyMs)} | ${r.failed} |`).join('\n')}
`
mkdirSync('bench/raw', { recursive: true })
const stamp = date.replace(/[:.]/g, '-')
writeFileSync(`bench/raw/${stamp}.json`, JSON.stringify({ date, commit, startArgs, results, pgbenchResults, halfLoad, scaling, peakRssKb, embedded, embeddedPeakRssKb }, null, 2))
// The page above the mark is this run's; below it, the analysis and the other benchmarks'
// results (written by hand) are kept as they are.
const MARK = '<!-- Above: written by make bench (bench/run.mjs) for its latest run. Below: kept by it as it is. -->'
const before = (() => { try { return readFileSync('bench/RESULTS.md', 'utf8') } catch { return '' } })()
const kept = before.includes(MARK) ? before.slice(before.indexOf(MARK) + MARK.length) : '\n'
writeFileSync('bench/RESULTS.md', `${md}\n${MARK}${kept}`)
log(`wrote bench/RESULTS.md and bench/raw/${stamp}.json`)
await db.end()
process.exit(0)
