// OGC API – Features read side on BENCH_FEATURE_ROWS sources (default 1,000,000), in one run:
// the service's /collections/sources/items against MapServer 8's OGC API (Debian's cgi-mapserver
// as FastCGI under lighttpd, on the same table) and against pgbench running the service's own
// statements (the capped count and the page SELECT), each side at its best and out of the box
// (the service's pool sized to the cores or at its default; pgbench at one client per core or at
// 16); the first page of an unfiltered listing;
// deep paging (page 1,000 by cursors against page 1); and a 100,000-feature export with
// limit=10000 against ogr2ogr reading the table straight from PostGIS, with the service's peak RSS.
// HTTP loads run under wrk, and the service's also under autocannon (see `load`). Needs Debian's
// cgi-mapserver, lighttpd, gdal-bin (ogr2ogr) and wrk. BENCH_RUNS rounds (default 5) of
// BENCH_DURATION s (default 5); BENCH_ITEMS_ONLY=1 stops after the items table. Prints Markdown.
// Usage: npm run build && node bench/features.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'

if (spawnSync('wrk', ['--version']).error !== undefined) {
  process.stderr.write('bench/features.mjs needs wrk (Debian: apt-get install wrk)\n')
  process.exit(1)
}
const ROWS = Number(process.env.BENCH_FEATURE_ROWS ?? 1_000_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 5)
const CONNECTIONS = 16
const log = (m) => process.stderr.write(`[features] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const out = []
// The loads run synchronously (execFileSync), so this process's pooled keep-alive sockets get
// closed by the servers meanwhile without it noticing, and a request sent on one fails with
// "other side closed": such a request is sent once more, on a new connection.
async function fetch (url, init) {
  try {
    return await globalThis.fetch(url, init)
  } catch (err) {
    if (!['UND_ERR_SOCKET', 'EPIPE', 'ECONNRESET'].includes(err.cause?.code)) throw err
    return globalThis.fetch(url, init)
  }
}

const { url, env, db, seed, accountId } = await benchDatabase(log)
// Seeded boxes of 0.005° on a 0.01° grid, 3,000 a row from (-15, -15); periods of 30 days
// starting on one of 1,461 days from 2020-01-01, with the triggers off (disjoint squares: they
// would record no conflict, and the reads measured here read no version or event). With
// BENCH_DATABASE_URL, a database seeded by an earlier run is used as it is.
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench'`)).rows[0].n) !== ROWS) {
  await seed(1, ROWS, { triggers: false, period: "tstzrange('2020-01-01Z'::timestamptz + (n % 1461) * interval '1 day', '2020-01-01Z'::timestamptz + (n % 1461 + 30) * interval '1 day', '[)')" })
}
// 10,000 polygons of 500 vertices (circles) in another organisation, for the memory of a
// 10,000-feature page.
const BIG = 10_000
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench-big'`)).rows[0].n) !== BIG) {
  await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
    SELECT 'src_big' || lpad(n::text, 18, '0'), 'big-' || n, 'bench-big', $1::uuid,
      ST_Buffer(ST_SetSRID(ST_MakePoint(100 + (n % 100) * 0.1, (n / 100) * 0.1), 4326), 0.04, 125), '[2024-01-01Z,2024-02-01Z)'
    FROM generate_series(1, ${BIG}) AS n`, [accountId])
}
await db.query('VACUUM (ANALYZE) sources')
const pgUrl = new URL(url)

// The service, as npm start runs it, twice: with its pool sized to the database's cores
// (DB_POOL_MAX = 2 per core, the PostgreSQL wiki's rule of thumb for connections; BENCH_DB_POOL_MAX
// overrides it), measured against pgbench at its best below, and at the default DB_POOL_MAX (10),
// measured against pgbench at CONNECTIONS clients: each side tuned to the machine, and each
// out of the box. The first serves every other measurement.
const CORES = (await import('node:os')).cpus().length
const POOL = Number(process.env.BENCH_DB_POOL_MAX ?? 2 * CORES)
async function startService (poolMax) {
  const port = await freePort()
  const serviceEnv = { ...env }
  delete serviceEnv.DB_POOL_MAX
  if (poolMax !== undefined) serviceEnv.DB_POOL_MAX = String(poolMax)
  const proc = spawn(process.execPath, SERVICE_ARGS, {
    env: { ...serviceEnv, PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 'ignore', 'inherit']
  })
  process.on('exit', () => proc.kill())
  for (let i = 0; i < 200; i++) { try { if ((await fetch(`http://127.0.0.1:${port}/ready`)).ok) break } catch {} await sleep(100) }
  return { proc, port }
}
const { proc: service, port: servicePort } = await startService(POOL)
const { port: defaultPoolPort } = await startService(undefined)
const login = async (email) => (await (await fetch(`http://127.0.0.1:${servicePort}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: PASSWORD }) })).json()).token
const token = await login('bench@example.org')
try {
  execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'big@example.org', '--org', 'bench-big', '--role', 'viewer', '--password-stdin'], { env, input: PASSWORD, stdio: ['pipe', 'ignore', 'ignore'] })
} catch {} // there from an earlier run
const bigToken = await login('big@example.org')
const base = `http://127.0.0.1:${servicePort}`
// The naive handler (bench/naive-server.mjs): Fastify and pg running the service's statement for
// a bbox page, nothing else (no authentication, validation or rate limit), its pool sized as the
// service's: the framework's floor for the bbox loads.
const naivePort = await freePort()
const naive = spawn(process.execPath, ['bench/naive-server.mjs'], { env: { ...env, PORT: String(naivePort), ORG: 'bench', ACCOUNT_ID: accountId, DB_POOL_MAX: String(POOL), NODE_ENV: 'production' }, stdio: ['ignore', 'ignore', 'inherit'] })
process.on('exit', () => naive.kill())
for (let i = 0; i < 200; i++) { try { if ((await fetch(`http://127.0.0.1:${naivePort}/sources?id=x`)).status < 500) break } catch {} await sleep(100) }

// MapServer 8, OGC API on the same table (its documented FastCGI set-up, under lighttpd).
const msDir = tempDir('bench-mapserver-')
const msPort = await freePort()
writeFileSync(join(msDir, 'mapserver.conf'), `CONFIG\n  ENV\n    MS_MAP_PATTERN "^${msDir}/"\n  END\n  MAPS\n    "sources" "${msDir}/sources.map"\n  END\nEND\n`)
writeFileSync(join(msDir, 'sources.map'), `MAP
  NAME "sources"
  EXTENT -180 -90 180 90
  PROJECTION "init=epsg:4326" END
  WEB
    METADATA
      "oga_enable_request" "*"
      "oga_onlineresource" "http://127.0.0.1:${msPort}/mapserver/sources/ogcapi"
      "ows_title" "sources"
      "ows_srs" "EPSG:4326"
      "ows_enable_request" "*"
    END
  END
  LAYER
    NAME "sources"
    TYPE POLYGON
    STATUS ON
    CONNECTIONTYPE POSTGIS
    CONNECTION "host=${pgUrl.hostname} port=${pgUrl.port} dbname=${pgUrl.pathname.slice(1)} user=${pgUrl.username || 'postgres'}"
    DATA "geom from (select id, feature_id, organisation, geom, lower(period) as start_at, upper(period) as end_at from sources) as s using unique id using srid=4326"
    PROCESSING "CLOSE_CONNECTION=DEFER"
    TEMPLATE "void"
    METADATA
      "gml_include_items" "all"
      "gml_featureid" "id"
      "oga_title" "sources"
    END
    PROJECTION "init=epsg:4326" END
  END
END
`)
writeFileSync(join(msDir, 'lighttpd.conf'), `server.document-root = "${msDir}"
server.port = ${msPort}
server.bind = "127.0.0.1"
server.modules = ("mod_fastcgi")
server.errorlog = "${msDir}/error.log"
fastcgi.server = ( "/mapserver" => (( "bin-path" => "/usr/lib/cgi-bin/mapserv", "socket" => "${msDir}/fcgi.sock", "check-local" => "disable", "max-procs" => 2, "bin-environment" => ("MAPSERVER_CONFIG_FILE" => "${msDir}/mapserver.conf") )) )
`)
// Its own process group, so that its FastCGI mapserv children are stopped with it.
const lighttpd = spawn('lighttpd', ['-D', '-f', join(msDir, 'lighttpd.conf')], { stdio: 'ignore', detached: true })
process.on('exit', () => { try { process.kill(-lighttpd.pid, 'SIGKILL') } catch {} })
const msItems = `http://127.0.0.1:${msPort}/mapserver/sources/ogcapi/collections/sources/items`
for (let i = 0; i < 100; i++) { try { if ((await fetch(`${msItems}?f=json&limit=1`)).ok) break } catch {} await sleep(100) }

// Random windows over the seeded area (x: -15..15, y: -15..-15 + ROWS/3000 * 0.01).
const yRows = Math.floor(ROWS / 3000)
const windows = (size) => Array.from({ length: 500 }, () => {
  const x = -15 + Math.random() * (30 - size)
  const y = -15 + Math.random() * Math.max(0.01, yRows * 0.01 - size)
  return [x, y, x + size, y + size].map((v) => v.toFixed(4)).join(',')
})
const intervals = Array.from({ length: 500 }, () => {
  const start = new Date(Date.UTC(2020, 0, 1) + Math.floor(Math.random() * 1400) * 86_400_000)
  const end = new Date(start.getTime() + 10 * 86_400_000)
  return `${start.toISOString().slice(0, 19)}Z/${end.toISOString().slice(0, 19)}Z`
})

// Each HTTP load runs under wrk (C, ~0.03 ms of CPU per request on the two cores it shares with
// the service and PostgreSQL, as pgbench's own client is C) unless `client` says autocannon
// (Node, ~0.1–0.3 ms per request: bench/load.mjs). The service is measured under both.
function load (target, paths, client = 'wrk') {
  const url = { service: base, 'service-pool-default': `http://127.0.0.1:${defaultPoolPort}`, naive: `http://127.0.0.1:${naivePort}`, mapserver: `http://127.0.0.1:${msPort}` }[target]
  const s = { url, connections: CONNECTIONS, duration: DURATION, token: target === 'mapserver' || target === 'naive' ? undefined : token, kind: 'paths', paths, client }
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  log(`${target} (${client}): ${Math.round(r.rps)} req/s, status ${JSON.stringify(r.statusCodes)}, errors ${r.errors}, timeouts ${r.timeouts}, generator ${(r.generatorCpuMs * 1000 / Math.max(1, r.total)).toFixed(0)} µs CPU/request`)
  if (r.non2xx > 0 || r.errors > 0) log(`${target} (${client}): ${r.non2xx} answers not 2xx, ${r.errors} errors`)
  return r
}
// pgbench on the service's own statements for a first page (bbox and datetime loads are first
// pages; sources.listing.ts listFirstSources), taken from the service's build as it compiles
// them, with its parameters as pgbench variables.
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const pgDir = tempDir('bench-features-pgbench-')
const { compileByShape, queryBuilder } = await import('../dist/db/compiled-query.js')
const listing = await import('../dist/sources/sources.listing.js')
const { searchBoxes } = await import('../dist/sources/search-box.js')
// `vars` maps each parameter's value in `input` to the pgbench expression that stands for it.
// pgbench reads ":name" as a variable, so each single colon (all are in string literals, such as
// '"conflict":true' and to_char's format; casts are "::") becomes chr(58), which PostgreSQL folds
// back into the constant when it plans the statement.
function statement (build, input, vars) {
  const q = compileByShape((i) => build(queryBuilder, i), listing.LIST_INPUT_SHAPE_KEYS)(input)
  return q.sql.replace(/(?<!:):(?!:)/g, "' || chr(58) || '").replace(/\$(\d+)/g, (_, n) => {
    const v = q.parameters[Number(n) - 1]
    if (!vars.has(v)) throw new Error(`no pgbench variable for parameter ${n} (${v})`)
    return vars.get(v)
  }).replace(/\s*\n\s*/g, ' ') + ';'
}
const page = { sort: [{ field: 'id', descending: false }], limit: 100 }
const CAP = 100_000 // ITEMS_COUNT_MAX's default
const common = [['bench', ':org'], [100, ':lim'], [CAP, ':cap']]
function pgbenchFile (name, script) {
  const file = join(pgDir, `${name}.sql`)
  writeFileSync(file, script)
  return file
}
// Raw SQL at its best: pgbench with CONNECTIONS clients (the issue's protocol) and with one
// client per core, the ratio taken against the faster. On a 2-vCPU VM, 16 busy backends thrash
// and lose up to half of pgbench's throughput (docs/performance.md), and a ratio against the
// slower would credit the service with PostgreSQL's own contention.
function pgbench (file, clients = CONNECTIONS) {
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(2, clients)), '-T', String(DURATION), '-D', 'org=bench', '-D', 'lim=100', '-D', `cap=${CAP}`, '-f', file, url], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`pgbench ${file}: ${r.stderr}`)
  const tps = Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
  log(`pgbench (${clients} clients): ${Math.round(tps)} tps`)
  return tps
}
// With a bbox: one statement, the matches found once, counted, and the page chosen among them.
function bboxScript (size) {
  const input = { scope: { organisation: 'bench' }, filter: { boxes: searchBoxes(1001, 1002, 1003, 1004) }, page, cap: CAP }
  const vars = new Map([...common, [1001, ':x'], [1002, ':y'], [1003, ':x2'], [1004, ':y2']])
  return `\\set xi random(0, ${Math.round((30 - size) * 1000)})
\\set yi random(0, ${Math.max(1, Math.round((yRows * 0.01 - size) * 1000))})
\\set x -15 + :xi / 1000.0
\\set y -15 + :yi / 1000.0
\\set x2 :x + ${size}
\\set y2 :y + ${size}
${statement(listing.countedPageQuery, input, vars)}
`
}
// Otherwise the page, then the count (there is always more than one page here).
function datetimeScript () {
  const input = { scope: { organisation: 'bench' }, filter: { datetime: { from: '2001-01-01T00:00:00Z', to: '2001-01-02T00:00:00Z' } }, page, cap: CAP }
  const vars = new Map([...common, ['2001-01-01T00:00:00Z', "('2020-01-01Z'::timestamptz + :d * interval '1 day')"], ['2001-01-02T00:00:00Z', "('2020-01-01Z'::timestamptz + (:d + 10) * interval '1 day')"]])
  return `\\set d random(0, 1400)
${statement(listing.listPageQuery, input, vars)}
${statement(listing.countQuery, input, vars)}
`
}

// The floor: bench/floor-server.mjs (no framework, no database) answering a body of a page's
// mean size, under the same generator. With the service's own CPU added to PostgreSQL's on the
// same two cores, 1 / (1 / floor + 1 / pgbench) bounds what any HTTP service could reach.
async function floor (bytes) {
  const port = await freePort()
  const server = spawn(process.execPath, ['bench/floor-server.mjs'], { env: { ...process.env, PORT: String(port), FLOOR_BODY_BYTES: String(bytes) }, stdio: 'ignore' })
  for (let i = 0; i < 100; i++) { try { await fetch(`http://127.0.0.1:${port}/`); break } catch {} await sleep(50) }
  const rates = Array.from({ length: RUNS }, () => JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify({ url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration: DURATION, kind: 'paths', paths: ['/'], client: 'wrk' })], { encoding: 'utf8' })).rps)
  server.kill()
  return median(rates)
}

const table = [`| scenario | service req/s (wrk), DB_POOL_MAX=${POOL} / default 10 | service req/s (autocannon) | MapServer req/s (wrk) | pgbench tps (the service's statements), ${CONNECTIONS} clients / ${CORES} clients | floor req/s (same body size) | service × MapServer | service × pgbench, each at its best: pool ${POOL} × the faster pgbench, wrk (min–max of the rounds) | the same, autocannon (min–max) | each out of the box: pool 10 × pgbench at ${CONNECTIONS} clients, wrk | bound × pgbench at its best | naive handler (Fastify + pg, the same statement, pool ${POOL}) × pgbench at its best, wrk (min–max) |`, '|---|---|---|---|---|---|---|---|---|---|---|---|']
const range = (ratios) => `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`
const row = (name, { svc, svcDefault, svcAc, ms, pg, pgMany, pgFew, ratios, ratiosAc, ratiosMany, ratiosNaive }, fl) => `| ${name} | ${Math.round(svc).toLocaleString('en')} / ${Math.round(svcDefault).toLocaleString('en')} | ${Math.round(svcAc).toLocaleString('en')} | ${Math.round(ms).toLocaleString('en')} | ${Math.round(pgMany).toLocaleString('en')} / ${Math.round(pgFew).toLocaleString('en')} | ${Math.round(fl).toLocaleString('en')} | ${ms > 0 ? `${(svc / ms).toFixed(2)}×` : '—'} | **${range(ratios)}** | ${range(ratiosAc)} | ${range(ratiosMany)} | ${(1 / (1 / fl + 1 / pg) / pg).toFixed(2)}× | ${ratiosNaive.length > 0 ? range(ratiosNaive) : '—'} |`
async function meanBytes (paths) {
  let total = 0
  for (const p of paths.slice(0, 20)) total += (await (await fetch(`${base}${p}`, { headers: { authorization: `Bearer ${token}` } })).arrayBuffer()).byteLength
  return Math.round(total / Math.min(20, paths.length))
}
// RUNS rounds, each the service (wrk; its pool sized, then at the default), pgbench (both client
// counts), MapServer (wrk, unless `mapServerLast`), then the service again under autocannon, so that the two sides of a ratio are measured seconds apart:
// this machine's speed drifts by ±15 % over minutes. A ratio is the median of the rounds'
// ratios; the autocannon ratio takes the pgbench run just before it. MapServer's rounds come
// last for the datetime load, which it cannot serve (it counts the whole table per request, and
// its processes stay busy after the load ends).
function rounds (servicePaths, mapServerPaths, file, { mapServerLast = false, naivePaths } = {}) {
  const svc = []; const svcDefault = []; const svcAc = []; const pgMany = []; const pgFew = []; let ms = []; const nv = []
  for (let i = 0; i < RUNS; i++) {
    if (naivePaths !== undefined) nv.push(load('naive', naivePaths).rps)
    svc.push(load('service', servicePaths).rps)
    svcDefault.push(load('service-pool-default', servicePaths).rps)
    pgMany.push(pgbench(file))
    pgFew.push(pgbench(file, CORES))
    if (!mapServerLast) ms.push(load('mapserver', mapServerPaths).rps)
    svcAc.push(load('service', servicePaths, 'autocannon').rps)
  }
  if (mapServerLast) ms = Array.from({ length: RUNS }, () => load('mapserver', mapServerPaths).rps)
  const pg = pgMany.map((m, i) => Math.max(m, pgFew[i]))
  return {
    svc: median(svc), svcDefault: median(svcDefault), svcAc: median(svcAc), ms: median(ms), pg: median(pg), pgMany: median(pgMany), pgFew: median(pgFew),
    ratios: svc.map((s, i) => s / pg[i]), ratiosAc: svcAc.map((s, i) => s / pg[i]), ratiosMany: svcDefault.map((s, i) => s / pgMany[i]), ratiosNaive: nv.map((s, i) => s / pg[i])
  }
}
for (const [name, size] of [['bbox 0.05° window, limit=100', 0.05], ['bbox 0.4° window, limit=100', 0.4]]) {
  const ws = windows(size)
  log(name)
  const paths = ws.map((w) => `/collections/sources/items?limit=100&bbox=${w}`)
  load('service', paths.slice(0, 50))
  load('service', paths.slice(0, 50), 'autocannon')
  load('service-pool-default', paths.slice(0, 50))
  load('naive', paths.slice(0, 50))
  const r = rounds(paths, ws.map((w) => `/mapserver/sources/ogcapi/collections/sources/items?f=json&limit=100&bbox=${w}`), pgbenchFile(`bbox-${size}`, bboxScript(size)), { naivePaths: paths })
  table.push(row(name, r, await floor(await meanBytes(paths))))
}
{
  log('datetime')
  const paths = intervals.map((i) => `/collections/sources/items?limit=100&datetime=${i}`)
  const r = rounds(paths, intervals.map((i) => `/mapserver/sources/ogcapi/collections/sources/items?f=json&limit=100&datetime=${i}`), pgbenchFile('datetime', datetimeScript()), { mapServerLast: true })
  table.push(row('datetime 10-day interval, limit=100 (MapServer ignores datetime)', r, await floor(await meanBytes(paths))))
  // MapServer's processes go on counting the table for requests the generator gave up on: cancel
  // their statements so they do not slow the measurements below.
  // their statements (again, while lighttpd still hands it queued requests, up to a minute) so
  // they do not slow the measurements below.
  let cancelled = 0
  for (let quiet = 0, i = 0; quiet < 3 && i < 60; i++) {
    const n = Number((await db.query(`SELECT count(pg_cancel_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`)).rows[0].n)
    cancelled += n
    quiet = n === 0 ? quiet + 1 : 0
    await sleep(1000)
  }
  log(`cancelled ${cancelled} statements MapServer was still running`)
}
out.push(`### Items on ${ROWS.toLocaleString('en')} sources (${CONNECTIONS} connections, median of ${RUNS} × ${DURATION} s)`, '', ...table, '')
// BENCH_ITEMS_ONLY: the table above and nothing else (the ratios the issues name).
if (process.env.BENCH_ITEMS_ONLY !== undefined) {
  process.stdout.write(`${out.join('\n')}\n`)
  await db.end()
  process.exit(0)
}

// One request at a time: latency of single pages.
async function timed (u, headers = { authorization: `Bearer ${token}` }) {
  const t0 = performance.now()
  const r = await fetch(u, { headers })
  const body = await r.json()
  return { ms: performance.now() - t0, body }
}
const firstService = []; const firstMs = []
for (let i = 0; i < 5; i++) {
  try { firstService.push((await timed(`${base}/collections/sources/items?limit=100`)).ms) } catch (err) { log(`service first page: ${err.message}`) }
  // MapServer may still be busy with the datetime load it could not serve (it ignores datetime
  // and counts the whole table per request): a failure is reported, not fatal.
  try { firstMs.push((await timed(`${msItems}?f=json&limit=100`, {})).ms) } catch (err) { log(`MapServer first page: ${err.message}`) }
}
const unfiltered = await timed(`${base}/collections/sources/items?limit=100`)
out.push(`- First page of the unfiltered listing (limit=100), median of 5: service ${firstService.length > 0 ? median(firstService).toFixed(1) : 'failed'} ms (numberMatched ${unfiltered.body.numberMatched === undefined ? 'omitted: over 100,000' : unfiltered.body.numberMatched}), MapServer ${firstMs.length > 0 ? `${median(firstMs).toFixed(1)} ms` : 'failed'}.`)

// Deep paging: follow 1,000 next links of 100.
const pageMs = []
let next = `${base}/collections/sources/items?limit=100`
for (let page = 1; page <= 1000 && next; page++) {
  const { ms, body } = await timed(next)
  pageMs.push(ms)
  next = body.links.find((l) => l.rel === 'next')?.href
}
const early = median(pageMs.slice(0, 10)); const late = median(pageMs.slice(-10))
out.push(`- Deep paging by cursor, limit=100: pages 1–10 median ${early.toFixed(1)} ms, pages 991–1,000 median ${late.toFixed(1)} ms (${(late / early).toFixed(2)}× the first).`)

// Memory: 10,000-feature pages of 500-vertex polygons (~190 MB of GeoJSON each), 1 and 4 at once,
// against the peak RSS of everything above (VmHWM, reset between measurements).
const status = () => readFileSync(`/proc/${service.pid}/status`, 'utf8')
const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status())?.[1] ?? 0) / 1024
const normalPeak = kb('VmHWM')
for (const concurrent of [1, 4]) {
  writeFileSync(`/proc/${service.pid}/clear_refs`, '5')
  const before = kb('VmRSS')
  const t0 = performance.now()
  const sizes = await Promise.all(Array.from({ length: concurrent }, async () => {
    const r = await fetch(`${base}/collections/sources/items?limit=10000`, { headers: { authorization: `Bearer ${bigToken}` } })
    let bytes = 0
    for await (const chunk of r.body) bytes += chunk.length
    return bytes
  }))
  const peak = kb('VmHWM')
  out.push(`- ${concurrent} × a 10,000-feature page of 500-vertex polygons (${(sizes[0] / 1e6).toFixed(0)} MB each, ${((performance.now() - t0) / 1000).toFixed(1)} s): service peak RSS ${Math.round(peak)} MB, against ${Math.round(normalPeak)} MB for the loads above (${Math.round(peak - normalPeak) >= 0 ? '+' : ''}${Math.round(peak - normalPeak)} MB; RSS before ${Math.round(before)} MB).`)
}

// Export 100,000 features (a band of whole grid rows) with limit=10000, against ogr2ogr on PG.
const band = `-15,-15,15,${(-15 + Math.ceil(100_000 / 3000) * 0.01 - 0.001).toFixed(3)}`
writeFileSync(`/proc/${service.pid}/clear_refs`, '5')
let exported = 0
const t0 = performance.now()
next = `${base}/collections/sources/items?limit=10000&bbox=${band}`
while (next) {
  const r = await fetch(next, { headers: { authorization: `Bearer ${token}` } })
  const body = await r.json()
  exported += body.features.length
  next = body.links.find((l) => l.rel === 'next')?.href
}
const apiSeconds = (performance.now() - t0) / 1000
const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${service.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
const [w, s, e, n] = band.split(',')
const pgT0 = performance.now()
const ogr = spawnSync('ogr2ogr', ['-f', 'GeoJSON', '/vsistdout/', `PG:host=${pgUrl.hostname} port=${pgUrl.port} dbname=${pgUrl.pathname.slice(1)} user=${pgUrl.username || 'postgres'}`, 'sources', '-spat', w, s, e, n], { maxBuffer: 1024 * 1024 * 1024 })
const pgSeconds = (performance.now() - pgT0) / 1000
const ogrFeatures = (ogr.stdout.toString().match(/"type": "Feature"/g) ?? []).length
out.push(`- Export of ${exported.toLocaleString('en')} features with limit=10000 through the API: ${apiSeconds.toFixed(1)} s, ${Math.round(exported / apiSeconds).toLocaleString('en')} features/s, service peak RSS ${Math.round(hwm)} MB (VmHWM over the export); ogr2ogr reading the same ${ogrFeatures.toLocaleString('en')} straight from PostGIS (PG driver, to GeoJSON): ${pgSeconds.toFixed(1)} s, ${Math.round(ogrFeatures / pgSeconds).toLocaleString('en')} features/s (API ${(pgSeconds / apiSeconds).toFixed(2)}× its rate).`)

process.stdout.write(`${out.join('\n')}\n`)
await db.end()
process.exit(0)
