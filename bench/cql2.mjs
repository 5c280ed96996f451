// CQL2 filters on /collections/sources/items over BENCH_FEATURE_ROWS sources (default 1,000,000,
// seeded as bench/features.mjs seeds them): each filter against the same question asked with
// bbox or datetime, and against pgbench running the statements the service runs for it (taken
// from the service's build, as bench/features.mjs does), each side at its best (the service's
// pool at 2 per core under wrk; pgbench at one client per core and at 16, the faster):
// - S_INTERSECTS(geometry, BBOX(<0.05° window>)) against bbox=<the window>;
// - T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL(<10 days>)) against datetime=<the days>;
// - a mixed filter (area, conflict, a 0.4° window, 30 days) against its SQL.
// Then the microseconds to parse, check and compile a typical filter and the largest one the
// limits allow, and EXPLAIN of each filter's statement (the GiST index it uses).
// Needs wrk (Debian: apt-get install wrk). BENCH_RUNS rounds (default 4) of BENCH_DURATION s
// (default 5). Prints Markdown. Usage: npm run build && node bench/cql2.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'

if (spawnSync('wrk', ['--version']).error !== undefined) {
  process.stderr.write('bench/cql2.mjs needs wrk (Debian: apt-get install wrk)\n')
  process.exit(1)
}
const ROWS = Number(process.env.BENCH_FEATURE_ROWS ?? 1_000_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 4)
const CONNECTIONS = 16
const CORES = cpus().length
const log = (m) => process.stderr.write(`[cql2] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const out = []

const { url, env, db, seed } = await benchDatabase(log)
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench'`)).rows[0].n) !== ROWS) {
  await seed(1, ROWS, { period: "tstzrange('2020-01-01Z'::timestamptz + (n % 1461) * interval '1 day', '2020-01-01Z'::timestamptz + (n % 1461 + 30) * interval '1 day', '[)')" })
}
await db.query('VACUUM (ANALYZE) sources')

const port = await freePort()
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, DB_POOL_MAX: String(2 * CORES), PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => service.kill())
const base = `http://127.0.0.1:${port}`
for (let i = 0; i < 200; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
const token = (await (await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token

const yRows = Math.floor(ROWS / 3000)
const window = (size) => {
  const x = -15 + Math.random() * (30 - size)
  const y = -15 + Math.random() * Math.max(0.01, yRows * 0.01 - size)
  return [x, y, x + size, y + size].map((v) => Number(v.toFixed(4)))
}
const days = (n) => {
  const start = new Date(Date.UTC(2020, 0, 1) + Math.floor(Math.random() * 1400) * 86_400_000)
  return [start, new Date(start.getTime() + n * 86_400_000)].map((d) => `${d.toISOString().slice(0, 19)}Z`)
}
const items = (query) => `/collections/sources/items?limit=100&${new URLSearchParams(query).toString()}`

function load (paths) {
  const s = { url: base, connections: CONNECTIONS, duration: DURATION, token, kind: 'paths', paths, client: 'wrk' }
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  if (r.non2xx > 0 || r.errors > 0) log(`${r.non2xx} answers not 2xx, ${r.errors} errors: ${JSON.stringify(r.statusCodes)}`)
  log(`service: ${Math.round(r.rps)} req/s`)
  return r.rps
}

// pgbench on the service's own statements, compiled by its build, parameters as variables.
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const pgDir = tempDir('bench-cql2-pgbench-')
const { compileByShape, queryBuilder } = await import('../dist/db/compiled-query.js')
const listing = await import('../dist/sources/sources.listing.js')
const { checkFilter } = await import('../dist/features/filters/cql2.js')
const page = { sort: [{ field: 'id', descending: false }], limit: 100 }
const CAP = 100_000
const common = [['bench', ':org'], [100, ':lim'], [CAP, ':cap']]
const compiled = (build, input) => compileByShape((i) => build(queryBuilder, i), listing.LIST_INPUT_SHAPE_KEYS)(input)
function statement (build, input, vars) {
  const q = compiled(build, input)
  return q.sql.replace(/(?<!:):(?!:)/g, "' || chr(58) || '").replace(/\$(\d+)/g, (_, n) => {
    const v = q.parameters[Number(n) - 1]
    if (!vars.has(v)) throw new Error(`no pgbench variable for parameter ${n} (${v})`)
    return vars.get(v)
  }).replace(/\s*\n\s*/g, ' ') + ';'
}
const expr = (text) => {
  const checked = checkFilter(text, 'cql2-text')
  if ('error' in checked) throw new Error(`${text}: ${checked.error}`)
  return checked.expr
}
function pgbench (name, script, clients) {
  const file = join(pgDir, `${name}.sql`)
  writeFileSync(file, script)
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(2, clients)), '-T', String(DURATION), '-D', 'org=bench', '-D', 'lim=100', '-D', `cap=${CAP}`, '-f', file, url], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`pgbench ${name}: ${r.stderr}`)
  const tps = Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
  log(`pgbench ${name} (${clients} clients): ${Math.round(tps)} tps`)
  return tps
}
const scope = { organisation: 'bench' }
const windowVars = (size) => `\\set xi random(0, ${Math.round((30 - size) * 1000)})
\\set yi random(0, ${Math.max(1, Math.round((yRows * 0.01 - size) * 1000))})
\\set x -15 + :xi / 1000.0
\\set y -15 + :yi / 1000.0
\\set x2 :x + ${size}
\\set y2 :y + ${size}
\\set d random(0, 1400)
`
const day = (offset) => `('2020-01-01Z'::timestamptz + (:d + ${offset}) * interval '1 day')`
const vars = new Map([...common, [101.5, ':x'], [71.5, ':y'], [102.5, ':x2'], [72.5, ':y2'], ['2001-01-01T00:00:00.000000Z', day(0)], ['2001-01-11T00:00:00.000000Z', day(10)], ['2001-01-31T00:00:00.000000Z', day(30)]])

/** The service's statements for a first page of `filter` (listFirstSources: one, or the page and the count). */
function script (filter, size) {
  const input = { scope, filter, page, cap: CAP }
  const spatial = filter.boxes !== undefined || (filter.expr !== undefined && JSON.stringify(filter.expr).includes('"spatial"'))
  const statements = spatial ? [statement(listing.countedPageQuery, input, vars)] : [statement(listing.listPageQuery, input, vars), statement(listing.countQuery, input, vars)]
  return `${windowVars(size)}${statements.join('\n')}\n`
}

const SCENARIOS = [
  {
    name: 'S_INTERSECTS(geometry, BBOX(0.05° window))',
    size: 0.05,
    filter: (w) => ({ filter: `S_INTERSECTS(geometry, BBOX(${w.join(', ')}))` }),
    plain: (w) => ({ bbox: w.join(',') }),
    plainName: 'bbox',
    pgFilter: { expr: expr('S_INTERSECTS(geometry, BBOX(101.5, 71.5, 102.5, 72.5))') }
  },
  {
    name: "T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL(10 days))",
    size: 0.05,
    filter: (_w, [a, b]) => ({ filter: `T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('${a}', '${b}'))` }),
    plain: (_w, [a, b]) => ({ datetime: `${a}/${b}` }),
    plainName: 'datetime',
    pgFilter: { expr: expr("T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2001-01-01T00:00:00Z', '2001-01-11T00:00:00Z'))") }
  },
  {
    name: 'area_m2 > 1e6 AND conflict = false AND S_INTERSECTS(0.4° window) AND T_INTERSECTS(30 days)',
    size: 0.4,
    filter: (w, [a, b]) => ({ filter: `area_m2 > 1000000 AND conflict = false AND S_INTERSECTS(geometry, BBOX(${w.join(', ')})) AND T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('${a}', '${b}'))` }),
    days: 30,
    pgFilter: { expr: expr("area_m2 > 1000000 AND conflict = false AND S_INTERSECTS(geometry, BBOX(101.5, 71.5, 102.5, 72.5)) AND T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2001-01-01T00:00:00Z', '2001-01-31T00:00:00Z'))") }
  }
]
// The mixed filter's 1e6 is a parameter: pgbench's statement binds it as a constant.
vars.set(1000000, '1000000')

const table = ['| filter | service req/s, filter | the same with bbox/datetime | filter × bbox/datetime | pgbench tps, 16 / 2 clients | filter × pgbench at its best (min–max) |', '|---|---|---|---|---|---|']
const range = (xs) => `${median(xs).toFixed(2)}× (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
for (const s of SCENARIOS) {
  log(s.name)
  const draws = Array.from({ length: 200 }, () => [window(s.size), days(s.days ?? 10)])
  const filtered = draws.map(([w, d]) => items(s.filter(w, d)))
  const plain = s.plain === undefined ? undefined : draws.map(([w, d]) => items(s.plain(w, d)))
  load(filtered.slice(0, 50))
  const sql = script(s.pgFilter, s.size)
  const svc = []; const alt = []; const pgMany = []; const pgFew = []
  if (plain !== undefined) load(plain.slice(0, 50))
  // Rounds alternate which goes first (ABBA): on a shared machine the second of two loads in a
  // row is often the faster.
  for (let i = 0; i < RUNS; i++) {
    if (plain !== undefined && i % 2 === 1) alt.push(load(plain))
    svc.push(load(filtered))
    if (plain !== undefined && i % 2 === 0) alt.push(load(plain))
    pgMany.push(pgbench(s.name.slice(0, 12).replace(/\W/g, '_'), sql, CONNECTIONS))
    pgFew.push(pgbench(s.name.slice(0, 12).replace(/\W/g, '_'), sql, CORES))
  }
  const pg = pgMany.map((m, i) => Math.max(m, pgFew[i]))
  table.push(`| ${s.name} | ${Math.round(median(svc)).toLocaleString('en')} | ${plain === undefined ? '—' : `${Math.round(median(alt)).toLocaleString('en')} (${s.plainName})`} | ${plain === undefined ? '—' : range(svc.map((v, i) => v / alt[i]))} | ${Math.round(median(pgMany)).toLocaleString('en')} / ${Math.round(median(pgFew)).toLocaleString('en')} | **${range(svc.map((v, i) => v / pg[i]))}** |`)
}
out.push(`### CQL2 filters on ${ROWS.toLocaleString('en')} sources (${CONNECTIONS} connections, limit=100, first pages, median of ${RUNS} × ${DURATION} s)`, '', ...table, '')

// Parse, check and compile (the statement's SQL for its shape, as the fast path does on a shape's
// first use), in microseconds per filter.
const TYPICAL = "feature_id LIKE 'site-%' AND area_m2 > 1000000 AND S_INTERSECTS(geometry, BBOX(10, 50, 10.05, 50.05)) AND T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2024-01-01', '2024-01-11'))"
const MAXIMAL = (() => {
  // At every limit but the length: depth 19 (16 NOTs, AND, a predicate, an operand), 1,000
  // positions (a zig-zag line: short coordinates, so that they fit the 8,192 characters), ~230 nodes.
  const line = `S_INTERSECTS(geometry, LINESTRING(${Array.from({ length: 1000 }, (_, i) => i % 2 === 0 ? '0 0' : '1 1').join(', ')}))`
  const list = `feature_id IN (${Array.from({ length: 200 }, (_, i) => `'f${i}'`).join(', ')})`
  return `${'NOT '.repeat(16)}(${line} AND ${list} AND area_m2 > 1 AND conflict = false)`
})()
/** CPU microseconds (user + system: this machine is shared, wall time is not this process's) per call of `fn`. */
function cpuMicros (fn, n) {
  for (let i = 0; i < Math.min(n, 200); i++) fn()
  const t0 = process.cpuUsage()
  for (let i = 0; i < n; i++) fn()
  const { user, system } = process.cpuUsage(t0)
  return (user + system) / n
}
const parse = (text) => () => {
  const checked = checkFilter(text, 'cql2-text')
  if ('error' in checked) throw new Error(checked.error)
}
const sqlOf = (text) => {
  const filter = { expr: expr(text) }
  return () => listing.listPageQuery(queryBuilder, { scope, filter, page, cap: CAP }).compile()
}
const [pt, st, pm, sm] = [cpuMicros(parse(TYPICAL), 5000), cpuMicros(sqlOf(TYPICAL), 2000), cpuMicros(parse(MAXIMAL), 500), cpuMicros(sqlOf(MAXIMAL), 500)]
out.push(`- CPU per filter, parse and check / build the page statement's SQL (which the fast path does once per shape): typical filter (${TYPICAL.length} characters) ${pt.toFixed(0)} µs / ${st.toFixed(0)} µs; the largest allowed (${MAXIMAL.length} characters, depth 19, 1,000 positions, ~230 nodes) ${pm.toFixed(0)} µs / ${sm.toFixed(0)} µs.`)

// EXPLAIN: the indexes each filter's statements use (a spatial first page is one statement; a
// temporal one the page, by the primary key's order, and the count).
const explained = [
  ['S_INTERSECTS(geometry, BBOX(0, -14, 0.05, -13.95))', listing.countedPageQuery, 'the page and count'],
  ["T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2021-01-01', '2021-01-11'))", listing.listPageQuery, 'the page'],
  ["T_INTERSECTS(INTERVAL(start_at, end_at), INTERVAL('2021-01-01', '2021-01-11'))", listing.countQuery, 'the count']
]
for (const [text, build, what] of explained) {
  const q = compiled(build, { scope, filter: { expr: expr(text) }, page, cap: CAP })
  const plan = (await db.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${q.sql}`, q.parameters)).rows.map((r) => r['QUERY PLAN'])
  const indexes = [...new Set(plan.join('\n').match(/(?:Index|Index Only|Bitmap Index) Scan (?:using|on) sources_\w+/g) ?? [])]
  out.push(`- EXPLAIN ${text}, ${what}: ${indexes.join(', ')}; ${plan.find((l) => l.startsWith('Execution Time'))}`)
  log(plan.join('\n'))
}

process.stdout.write(`${out.join('\n')}\n`)
await db.end()
process.exit(0)
