// Issue 47: conflicts as a resource against the same SQL in pgbench, on one throwaway PostGIS (or
// BENCH_DATABASE_URL), ratios from one run, rounds alternating (ABAB) as bench/history.mjs does.
// One client each side (a request at a time; pgbench -c 1 -M prepared).
//   list    GET /conflicts?limit=100&cursor=<random> against pgbench running the statement the
//           service runs (listConflictsQuery, compiled here) for the same page
//   stance  POST /conflicts/{id}/stance (If-Match) against pgbench's UPDATE of one stance (the
//           same triggers fire: transition check, version, history, events)
//   carve   POST /sources/carve (If-Match, all conflicts) of a 500-vertex polygon overlapping 10
//           squares of another organisation, against pgbench's UPDATE the service runs
//           (carveSource, compiled here; the same triggers: conflicts resolved, versions, events)
//   stance bound: the same POST answered 428 before any database work, and the UPDATE sent by
//           pg (the service's driver) without HTTP: what a one-client stance change cannot beat;
//           and the naive handler (bench/naive-server.mjs: Fastify + pg + the same statement)
// Scale: BENCH_CONFLICT_PAIRS pairs (default 20,000, each a source of org bench overlapping one of
// org bench-b) among BENCH_SOURCES sources (default twice the pairs; the sources beyond the pairs
// are seeded with the triggers off, as a replica would be: disjoint squares, no conflict among
// them). BENCH_RUNS rounds (3) of BENCH_DURATION s (5); BENCH_CARVES carve-outs a side a round (50).
// Prints Markdown.
// Usage: npm run build && node bench/conflict-states.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'
import { carveQuery, listConflictsQuery, updateStanceQuery } from '../dist/conflicts/conflicts.repository.js'

const PAIRS = Number(process.env.BENCH_CONFLICT_PAIRS ?? 20_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const SOURCES = Number(process.env.BENCH_SOURCES ?? 2 * PAIRS)
const CARVES = Number(process.env.BENCH_CARVES ?? 50)
const log = (m) => process.stderr.write(`[conflict-states] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, env, db, seed, accountId } = await benchDatabase(log)
// The pairs made here (renamed cfl_ and 32 digits below); a kept database also holds the
// carve-outs' pairs of earlier runs.
if (Number((await db.query(`SELECT count(*) AS n FROM conflicts WHERE id ~ '^cfl_[0-9]{32}$'`)).rows[0].n) !== PAIRS) {
  // A run stopped during the pairs' insert leaves the other sources (BENCH_DATABASE_URL): kept.
  const have = Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench' AND id NOT LIKE 'src_carve%'`)).rows[0].n)
  if (have !== SOURCES - PAIRS) {
    if (have !== 0) throw new Error(`the database has ${have} sources of bench, not ${SOURCES - PAIRS}: start from an empty one`)
    if (SOURCES > 2 * PAIRS) await seed(PAIRS + 1, SOURCES - 2 * PAIRS, { triggers: false })
    await seed(1, PAIRS)
  }
  await db.query(`DELETE FROM sources WHERE organisation = 'bench-b' AND id NOT LIKE 'src_crim%'`)
  const t0 = Date.now()
  // Each seeded 0.005° square overlapped by one of bench-b, shifted by half its side; in
  // statements of 1,000 rows, as the CLI's import writes (one statement of 100,000 rows did not
  // finish in 17 minutes: see the closing note of issue 47).
  for (let from = 1; from <= PAIRS; from += 1000) {
    await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
      SELECT 'src_' || lpad((n + 50000000)::text, 22, '0'), 'b-' || n, 'bench-b', $3::uuid,
        ST_MakeEnvelope((n % 3000) * 0.01 - 14.9975, (n / 3000 % 3000) * 0.01 - 14.9975, (n % 3000) * 0.01 - 14.9925, (n / 3000 % 3000) * 0.01 - 14.9925, 4326),
        '[2024-01-01Z,2024-02-01Z)'
      FROM generate_series($1::bigint, $2::bigint) AS n`, [from, Math.min(PAIRS, from + 999), accountId])
  }
  await db.query(`ALTER TABLE conflicts DISABLE TRIGGER USER`)
  await db.query(`UPDATE conflicts AS c SET id = 'cfl_' || lpad(r.n::text, 32, '0'), stance_a = 'acknowledged'
    FROM (SELECT id, row_number() OVER (ORDER BY source_a) AS n FROM conflicts) AS r WHERE r.id = c.id`)
  await db.query(`ALTER TABLE conflicts ENABLE TRIGGER USER`)
  log(`${PAIRS} pairs in ${Date.now() - t0} ms`)
}
await db.query('VACUUM (ANALYZE) sources, conflicts')

const port = await freePort()
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => service.kill())
const base = `http://127.0.0.1:${port}`
for (let i = 0; i < 1200; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
const token = (await (await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
const auth = { authorization: `Bearer ${token}` }
const cfl = (n) => `cfl_${String(n).padStart(32, '0')}`
const random = () => 1 + Math.floor(Math.random() * (PAIRS - 200))

// The naive handler (bench/naive-server.mjs): Fastify and pg running the service's stance
// statement, with no authentication, validation or anything else: the framework's floor.
const naivePort = await freePort()
const naive = spawn(process.execPath, ['bench/naive-server.mjs'], {
  env: { ...env, PORT: String(naivePort), ORG: 'bench', ACCOUNT_ID: accountId, NODE_ENV: 'production' }, stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => naive.kill())
const naiveBase = `http://127.0.0.1:${naivePort}`
for (let i = 0; i < 1200; i++) { try { if ((await fetch(`${naiveBase}/sources?id=x`)).status < 500) break } catch {} await sleep(100) }
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
function call (path, { method = 'GET', headers = {}, body, to = base } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${to}${path}`, { method, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, agent }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, etag: res.headers.etag, text: Buffer.concat(chunks).toString() }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}
async function service1 (name, status, send) {
  // The idle socket of the last round may have passed the service's keep-alive timeout meanwhile.
  agent.destroy()
  let done = 0
  const t0 = Date.now()
  const end = t0 + DURATION * 1000
  while (Date.now() < end) {
    const res = await send(done)
    if (res.status !== status) throw new Error(`${name}: ${res.status} ${res.text}`)
    done++
  }
  const rps = done / ((Date.now() - t0) / 1000)
  log(`${name}: ${rps.toFixed(1)} req/s`)
  return rps
}
const pgDir = tempDir('bench-conflicts-pgbench-')
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
/** tps and mean latency (ms) of a pgbench run of the script, for DURATION s or the arguments given. */
function pgbench (name, script, run = ['-T', String(DURATION)]) {
  const file = join(pgDir, `${name}.sql`)
  writeFileSync(file, script)
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', '1', ...run, '-D', `pairs=${PAIRS - 200}`, '-f', file, url], { encoding: 'utf8', maxBuffer: 1 << 24 })
  if (r.status !== 0) throw new Error(`pgbench ${name}: ${r.stderr}`)
  const tps = Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
  const latency = Number(/latency average = ([\d.]+) ms/.exec(r.stdout)?.[1])
  log(`pgbench ${name}: ${tps.toFixed(1)} tps`)
  return { tps, latency }
}
const literal = (v) => v === null ? 'NULL' : typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`
/**
 * A compiled statement as pgbench runs it: parameters inlined (`sub` may give a parameter's SQL),
 * and the colons of to_char's format quoted, since pgbench reads :name as a variable even inside
 * a literal ("HH24":"MI" is the same format).
 */
const inline = (compiled, sub = () => undefined) => compiled.sql.replaceAll('HH24:MI:SS', 'HH24":"MI":"SS')
  .replace(/\$(\d+)/g, (_m, i) => { const v = compiled.parameters[Number(i) - 1]; return sub(v) ?? literal(v) })
async function paired (a, b) {
  const as = []; const bs = []
  for (let r = 0; r < RUNS; r++) {
    if (r % 2 === 0) { as.push(await a()); bs.push(await b()) } else { bs.push(await b()); as.push(await a()) }
  }
  return { a: median(as), b: median(bs), ratio: median(as.map((x, i) => x / bs[i])), as, bs }
}

// The statement the service runs for a page after a cursor, compiled by the service's own code.
const compiler = new Kysely({ dialect: new PostgresDialect({ pool: { connect: async () => { throw new Error('compile only') }, end: async () => {} } }) })
const compiled = listConflictsQuery({ scope: { organisation: 'bench' }, organisation: 'bench', state: undefined, limit: 100, after: 'CURSOR' }).compile(compiler)
const listSql = inline(compiled, (v) => v === 'CURSOR' ? "('cfl_' || lpad(CAST(:n AS text), 32, '0'))" : undefined)
const out = {}
out.list = await paired(
  () => service1('GET /conflicts page', 200, () => call(`/conflicts?limit=100&cursor=${cfl(random())}`, { headers: auth })),
  () => pgbench('list', `\\set n random(1, :pairs)\n${listSql};\n`).tps
)

// Stances alternate between accepted and acknowledged (both allowed from the other). Each of the
// service's rounds starts knowing every pair's version and stance (read before the clock starts);
// pgbench runs the service's statement (updateStanceQuery, compiled here) with the stance to move
// to written as the same alternation.
const versions = new Map()
const stanceOf = new Map()
const stanceCompiled = updateStanceQuery({ id: 'CONFLICT', named: null, scope: { organisation: 'bench' }, organisation: 'bench', stance: 'STANCE', reason: null, versions: null, by: `@${accountId}` }).compile(compiler)
const stanceSql = inline(stanceCompiled, (v) => v === 'CONFLICT' ? "('cfl_' || lpad(CAST(:n AS text), 32, '0'))"
  : v === 'STANCE' ? "(CASE WHEN c.stance_a = 'accepted' THEN 'acknowledged' ELSE 'accepted' END)" : undefined)
const readStances = async () => {
  for (const r of (await db.query(`SELECT id, version, stance_a FROM conflicts WHERE organisation_a = 'bench' AND resolved_at IS NULL`)).rows) {
    versions.set(r.id, r.version); stanceOf.set(r.id, r.stance_a)
  }
}
// The naive handler's rounds come right after the service's in each round (the pgbench round
// between or before them, as paired() alternates), so both meet the same table.
const naiveRps = []
out.stance = await paired(
  async () => {
    await readStances()
    const rps = await service1('POST stance', 200, async () => {
      const id = cfl(random())
      const to = stanceOf.get(id) === 'accepted' ? 'acknowledged' : 'accepted'
      const res = await call(`/conflicts/${id}/stance`, { method: 'POST', headers: { ...auth, 'if-match': `W/"${versions.get(id)}"` }, body: JSON.stringify({ stance: to }) })
      if (res.status === 200) { versions.set(id, Number(/"(\d+)"/.exec(res.etag)[1])); stanceOf.set(id, to) }
      return res
    })
    await readStances()
    naiveRps.push(await service1('naive handler POST stance', 200, async () => {
      const id = cfl(random())
      const to = stanceOf.get(id) === 'accepted' ? 'acknowledged' : 'accepted'
      const res = await call(`/conflicts/${id}/stance`, { method: 'POST', to: naiveBase, headers: { 'if-match': `W/"${versions.get(id)}"` }, body: JSON.stringify({ stance: to }) })
      if (res.status === 200) { versions.set(id, Number(/"(\d+)"/.exec(res.etag)[1])); stanceOf.set(id, to) }
      return res
    }))
    return rps
  },
  async () => pgbench('stance', `\\set n random(1, :pairs)\n${stanceSql};\n`).tps
)
out.stance.naive = naiveRps

// What bounds the stance ratio in a one-client loop (measured in the same run): the request
// without its database work (the same POST without If-Match, answered 428 before any: the
// client, HTTP, authentication, the body's parse and check, the reply), and the statement alone
// from the service's database driver (pg, prepared, one at a time, no HTTP) where pgbench is C.
// A stance change costs at least both, so its ratio cannot pass
// pgbench's latency / (fixed latency + the driver's latency).
const fixed = []
const driver = []
const driverClient = new pg.Client({ connectionString: url })
await driverClient.connect()
for (let r = 0; r < RUNS; r++) {
  fixed.push(await service1('POST stance without If-Match (428, no database work)', 428, () =>
    call(`/conflicts/${cfl(random())}/stance`, { method: 'POST', headers: auth, body: JSON.stringify({ stance: 'accepted' }) })))
  for (const row of (await db.query(`SELECT id, version, stance_a FROM conflicts WHERE organisation_a = 'bench' AND resolved_at IS NULL`)).rows) {
    versions.set(row.id, row.version); stanceOf.set(row.id, row.stance_a)
  }
  let done = 0
  const t0 = Date.now()
  while (Date.now() < t0 + DURATION * 1000) {
    const id = cfl(random())
    const to = stanceOf.get(id) === 'accepted' ? 'acknowledged' : 'accepted'
    const q = updateStanceQuery({ id, named: null, scope: { organisation: 'bench' }, organisation: 'bench', stance: to, reason: null, versions: [versions.get(id)], by: `@${accountId}` }).compile(compiler)
    const res = await driverClient.query({ name: 'stance', text: q.sql, values: q.parameters })
    if (res.rows.length !== 1) throw new Error(`the driver's stance change of ${id} stored nothing`)
    versions.set(id, res.rows[0].version); stanceOf.set(id, to)
    done++
  }
  driver.push(done / ((Date.now() - t0) / 1000))
  log(`driver stance: ${driver.at(-1).toFixed(1)} statements/s`)
}
await driverClient.end()
out.stanceBound = { fixed: median(fixed), driver: median(driver) }
out.stanceBound.ceiling = (1 / (1 / out.stanceBound.fixed + 1 / out.stanceBound.driver)) / out.stance.b

// Carve-outs: subjects numbered 1..2·RUNS·CARVES, each a circle of 500 vertices (0.01° radius)
// with 10 squares of bench-b (0.004°) on its rim; the service and pgbench take turns on fresh ones.
const SUBJECTS = 2 * RUNS * CARVES
const subject = (k) => `src_carve${String(k).padStart(17, '0')}`
{ // made afresh each run: an earlier run carved some
  const t0 = Date.now()
  await db.query(`DELETE FROM sources WHERE id LIKE 'src_carve%' OR id LIKE 'src_crim%'`)
  // Their history too: source_versions keeps a deleted source's id for good, and these ids come back.
  await db.query(`DELETE FROM source_versions WHERE source_id LIKE 'src_carve%' OR source_id LIKE 'src_crim%'`)
  await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT 'src_crim' || lpad((k * 10 + j)::text, 18, '0'), 'rim-' || k || '-' || j, 'bench-b', $2::uuid,
      ST_Expand(ST_Point(40 + (k % 100) * 0.05 + 0.01 * cos(radians(36 * j)), (k / 100) * 0.05 + 0.01 * sin(radians(36 * j)), 4326), 0.002),
      '[2024-01-01Z,2024-02-01Z)'
    FROM generate_series(1, $1::int) AS k, generate_series(0, 9) AS j`, [SUBJECTS, accountId])
  await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT 'src_carve' || lpad(k::text, 17, '0'), 'carve-' || k, 'bench', $2::uuid,
      ST_Buffer(ST_Point(40 + (k % 100) * 0.05, (k / 100) * 0.05, 4326), 0.01, 'quad_segs=125'), '[2024-01-01Z,2024-02-01Z)'
    FROM generate_series(1, $1::int) AS k`, [SUBJECTS, accountId])
  log(`${SUBJECTS} carve subjects in ${Date.now() - t0} ms`)
}
const shape = (await db.query(`SELECT min(ST_NPoints(geom)) AS points, min(n) AS least, max(n) AS most FROM sources AS s,
  LATERAL (SELECT count(*) AS n FROM conflicts AS c WHERE c.source_a = s.id OR c.source_b = s.id) AS c WHERE s.id LIKE 'src_carve%'`)).rows[0]
log(`carve subjects: ${shape.points} points, ${shape.least}–${shape.most} conflicts each`)
await db.query('VACUUM (ANALYZE) sources, conflicts')
const carveCompiled = carveQuery('SUBJECT', { organisation: 'bench' }, null, null, `@${accountId}`).compile(compiler)
let nextSubject = 1
await db.query('DROP SEQUENCE IF EXISTS bench_carve_next; CREATE SEQUENCE bench_carve_next')
const carveMs = []
const pgCarveMs = []
out.carve = await paired(
  async () => {
    const versions = new Map((await db.query(`SELECT id, version FROM sources WHERE id LIKE 'src_carve%'`)).rows.map((r) => [r.id, r.version]))
    agent.destroy()
    const t0 = performance.now()
    for (let i = 0; i < CARVES; i++) {
      const id = subject(nextSubject++)
      const t = performance.now()
      const res = await call(`/sources/carve?id=${id}`, { method: 'POST', headers: { ...auth, 'if-match': `W/"${versions.get(id)}"` }, body: '{"conflicts":"all"}' })
      if (res.status !== 200) throw new Error(`carve ${id}: ${res.status} ${res.text}`)
      carveMs.push(performance.now() - t)
    }
    const rps = CARVES / ((performance.now() - t0) / 1000)
    log(`POST carve: ${rps.toFixed(1)} req/s`)
    return rps
  },
  async () => {
    await db.query(`SELECT setval('bench_carve_next', $1)`, [nextSubject])
    const script = `SELECT nextval('bench_carve_next') - 1 AS k \\gset\n${inline(carveCompiled, (v) => v === 'SUBJECT' ? "('src_carve' || lpad(CAST(:k AS text), 17, '0'))" : undefined)};\n`
    const r = pgbench('carve', script, ['-t', String(CARVES)])
    nextSubject += CARVES
    pgCarveMs.push(r.latency)
    return r.tps
  }
)
const left = (await db.query(`SELECT count(*) AS n FROM conflicts AS c JOIN sources AS s ON s.id IN (c.source_a, c.source_b)
  WHERE s.id LIKE 'src_carve%' AND c.resolved_at IS NULL AND s.id <= $1`, [subject(nextSubject - 1)])).rows[0].n
if (Number(left) !== 0) throw new Error(`${left} conflicts of carved subjects still unresolved`)

const f = (x, d = 0) => x.toFixed(d)
console.log([
  `Conflicts as a resource, ${PAIRS} pairs among ${SOURCES} sources, ${RUNS} rounds of ${DURATION} s, one client each side:`,
  '',
  '| measure | service | pgbench | ratio | target |',
  '|---|---|---|---|---|',
  `| GET /conflicts page of 100 vs the same SELECT | ${f(out.list.a)} req/s | ${f(out.list.b)} tps | ${f(out.list.ratio, 2)}× | ≥ 0.6× |`,
  `| POST stance (If-Match) vs the same UPDATE | ${f(out.stance.a)} req/s | ${f(out.stance.b)} tps | ${f(out.stance.ratio, 2)}× | ≥ 0.7× |`,
  `| POST stance without If-Match (428: no database work) | ${f(out.stanceBound.fixed)} req/s | | | |`,
  `| the stance UPDATE from pg (Node's driver, prepared, no HTTP) | ${f(out.stanceBound.driver)} statements/s | ${f(out.stance.b)} tps | ${f(out.stanceBound.driver / out.stance.b, 2)}× | |`,
  `| stance ceiling: pgbench's latency / (no-database request + the driver's statement) | | | **${f(out.stanceBound.ceiling, 2)}×** | |`,
  `| the naive handler's POST stance (Fastify + pg + the same statement, nothing else; each round's after the service's) | ${f(median(out.stance.naive))} req/s | ${f(out.stance.b)} tps | **${f(median(out.stance.naive.map((n, i) => n / out.stance.bs[i])), 2)}×** | |`,
  `| the service against the naive handler (the same rounds) | | | ${f(median(out.stance.naive.map((n, i) => out.stance.as[i] / n)), 2)}× | |`,
  `| POST carve (500 vertices, 10 conflicts) vs the same UPDATE | ${f(out.carve.a, 1)} req/s | ${f(out.carve.b, 1)} tps | ${f(out.carve.ratio, 2)}× | ≥ 0.7× |`,
  '',
  `Carve-out latency: service median ${f(median(carveMs), 1)} ms (p90 ${f([...carveMs].sort((a, b) => a - b)[Math.floor(carveMs.length * 0.9)], 1)} ms); pgbench mean ${f(median(pgCarveMs), 1)} ms.`
].join('\n'))
await db.end()
process.exit(0)
