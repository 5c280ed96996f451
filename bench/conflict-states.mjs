// Issue 47: conflicts as a resource against the same SQL in pgbench, on one throwaway PostGIS (or
// BENCH_DATABASE_URL), ratios from one run, rounds alternating (ABAB) as bench/history.mjs does.
// One client each side (a request at a time; pgbench -c 1 -M prepared).
//   list    GET /conflicts?limit=100&cursor=<random> against pgbench running the statement the
//           service runs (listConflictsQuery, compiled here) for the same page
//   stance  POST /conflicts/{id}/stance (If-Match) against pgbench's UPDATE of one stance (the
//           same triggers fire: transition check, version, history, events)
// Scale: BENCH_CONFLICT_PAIRS pairs (default 20,000: 40,000 sources, each of org bench
// overlapping one of org bench-b). BENCH_RUNS rounds (3) of BENCH_DURATION s (5). Prints Markdown.
// Usage: npm run build && node bench/conflict-states.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Kysely, PostgresDialect } from 'kysely'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'
import { listConflictsQuery } from '../dist/conflicts/conflicts.repository.js'

const PAIRS = Number(process.env.BENCH_CONFLICT_PAIRS ?? 20_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const log = (m) => process.stderr.write(`[conflict-states] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, env, db, seed, accountId } = await benchDatabase(log)
if (Number((await db.query('SELECT count(*) AS n FROM conflicts')).rows[0].n) !== PAIRS) {
  await seed(1, PAIRS)
  const t0 = Date.now()
  // Each seeded 0.005° square overlapped by one of bench-b, shifted by half its side.
  await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT 'src_' || lpad((n + 50000000)::text, 22, '0'), 'b-' || n, 'bench-b', $2::uuid,
      ST_MakeEnvelope((n % 3000) * 0.01 - 14.9975, (n / 3000 % 3000) * 0.01 - 14.9975, (n % 3000) * 0.01 - 14.9925, (n / 3000 % 3000) * 0.01 - 14.9925, 4326),
      '[2024-01-01Z,2024-02-01Z)'
    FROM generate_series(1, $1::bigint) AS n`, [PAIRS, accountId])
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

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
function call (path, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, agent }, (res) => {
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
function pgbench (name, script) {
  const file = join(pgDir, `${name}.sql`)
  writeFileSync(file, script)
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', '1', '-T', String(DURATION), '-D', `pairs=${PAIRS - 200}`, '-f', file, url], { encoding: 'utf8', maxBuffer: 1 << 24 })
  if (r.status !== 0) throw new Error(`pgbench ${name}: ${r.stderr}`)
  const tps = Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
  log(`pgbench ${name}: ${tps.toFixed(1)} tps`)
  return tps
}
async function paired (a, b) {
  const as = []; const bs = []
  for (let r = 0; r < RUNS; r++) {
    if (r % 2 === 0) { as.push(await a()); bs.push(await b()) } else { bs.push(await b()); as.push(await a()) }
  }
  return { a: median(as), b: median(bs), ratio: median(as.map((x, i) => x / bs[i])) }
}

// The statement the service runs for a page after a cursor, compiled by the service's own code.
const compiler = new Kysely({ dialect: new PostgresDialect({ pool: { connect: async () => { throw new Error('compile only') }, end: async () => {} } }) })
const compiled = listConflictsQuery({ scope: { organisation: 'bench' }, organisation: 'bench', state: undefined, limit: 100, after: 'CURSOR' }).compile(compiler)
// pgbench reads :name as a variable even inside a literal: the colons of to_char's format are
// quoted for it ("HH24":"MI" is the same format).
const listSql = compiled.sql.replaceAll('HH24:MI:SS', 'HH24":"MI":"SS').replace(/\$(\d+)/g, (_m, i) => {
  const v = compiled.parameters[Number(i) - 1]
  return v === 'CURSOR' ? "('cfl_' || lpad(CAST(:n AS text), 32, '0'))" : typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`
})
const out = {}
out.list = await paired(
  () => service1('GET /conflicts page', 200, () => call(`/conflicts?limit=100&cursor=${cfl(random())}`, { headers: auth })),
  () => pgbench('list', `\\set n random(1, :pairs)\n${listSql};\n`)
)

// Stances alternate between accepted and acknowledged (both allowed from the other).
const versions = new Map()
const stanceOf = new Map()
out.stance = await paired(
  () => service1('POST stance', 200, async () => {
    const n = random()
    let v = versions.get(n)
    if (v === undefined) {
      const r = (await db.query('SELECT version, stance_a FROM conflicts WHERE id = $1', [cfl(n)])).rows[0]
      v = r.version; stanceOf.set(n, r.stance_a)
    }
    const to = stanceOf.get(n) === 'accepted' ? 'acknowledged' : 'accepted'
    const res = await call(`/conflicts/${cfl(n)}/stance`, { method: 'POST', headers: { ...auth, 'if-match': `W/"${v}"` }, body: JSON.stringify({ stance: to }) })
    if (res.status === 200) { versions.set(n, Number(/"(\d+)"/.exec(res.etag)[1])); stanceOf.set(n, to) }
    return res
  }),
  async () => {
    const tps = pgbench('stance', `\\set n random(1, :pairs)
WITH writer AS (SELECT set_config('source_registry.account', 'bench', true) AS who)
UPDATE conflicts AS c SET stance_a = CASE WHEN c.stance_a = 'accepted' THEN 'acknowledged' ELSE 'accepted' END, reason_a = NULL
FROM writer WHERE c.id = 'cfl_' || lpad(CAST(:n AS text), 32, '0') AND c.resolved_at IS NULL;
`)
    versions.clear(); stanceOf.clear()
    return tps
  }
)

const f = (x, d = 0) => x.toFixed(d)
console.log([
  `Conflicts as a resource, ${PAIRS} pairs (${2 * PAIRS} sources), ${RUNS} rounds of ${DURATION} s, one client each side:`,
  '',
  '| measure | service | pgbench | ratio | target |',
  '|---|---|---|---|---|',
  `| GET /conflicts page of 100 vs the same SELECT | ${f(out.list.a)} req/s | ${f(out.list.b)} tps | ${f(out.list.ratio, 2)}× | ≥ 0.6× |`,
  `| POST stance (If-Match) vs the same UPDATE | ${f(out.stance.a)} req/s | ${f(out.stance.b)} tps | ${f(out.stance.ratio, 2)}× | ≥ 0.7× |`
].join('\n'))
await db.end()
process.exit(0)
