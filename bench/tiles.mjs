// Vector tiles (OGC API – Tiles, issue 40) on BENCH_FEATURE_ROWS sources (default 1,000,000,
// seeded as bench/features.mjs and bench/cql2.mjs seed them: 0.005° boxes on a 0.01° grid, 3,000
// a row from (-15, -15), so the whole seeded area is equally dense), in one run, at z14, z10 and
// z6 over tiles inside the seeded area:
// - tiles/s of the service (wrk, 16 connections, fresh requests: no If-None-Match, and the service
//   runs with TILES_CACHE_BYTES=0, so every tile is drawn; bench/tile-cache.mjs measures the
//   cache) against pgbench running the service's own ST_AsMVT statement (taken from
//   its build: tileQuery in src/tiles/tiles.repository.ts, the same SQL with the same parameters,
//   one pgbench script per tile with its parameters as \set variables; a tile the service draws
//   again because it is over TILES_MAX_BYTES has all its statements in the script), at 16 clients
//   and at one per core, the faster taken. The statement reads the ETag's change counters too, as
//   the service's does: a cold tile is one statement;
// - the floor of the service's own work: 304s of one tile (auth, change counters, ETag, no
//   drawing) under the same load, and the bound it gives with pgbench, 1 / (1/304s + 1/pgbench);
// - against MapServer 8's MVT output (Debian's cgi-mapserver as FastCGI under lighttpd, 2 mapserv
//   processes, as bench/features.mjs runs it) on the same rows with the same attributes, requests
//   `mode=tile&tilemode=gmap&tile=x+y+z&layers=all&map.imagetype=mvt`;
// - tile sizes (p50, max) per zoom, the service's peak RSS (VmHWM) while serving z6 at 16
//   connections, and cold (200) against revalidation (304, If-None-Match) latency p50, one request
//   at a time.
// Each round runs the service, pgbench and MapServer, in the reverse order every other round
// (ABBA: on this shared machine the later of two loads in a row is often the faster); a ratio is
// the median of the rounds' ratios. Needs wrk, cgi-mapserver and lighttpd (Debian). BENCH_RUNS
// rounds (default 4) of BENCH_DURATION s (default 5; z6 BENCH_Z6_DURATION, default 3 × that);
// BENCH_DATABASE_URL reuses a seeded `bench` database (bench/cql2.mjs's seeding is the same).
// Prints Markdown. Usage: npm run build && node bench/tiles.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'
import { MAX_BYTES, MAX_FEATURES, servicePath, tilePgbench, tilesAt as tilesIn } from './tile-statements.mjs'

for (const [bin, args, pkg] of [['wrk', ['--version'], 'wrk'], ['lighttpd', ['-v'], 'lighttpd'], ['/usr/lib/cgi-bin/mapserv', ['-v'], 'cgi-mapserver']]) {
  if (spawnSync(bin, args).error !== undefined) {
    process.stderr.write(`bench/tiles.mjs needs ${bin} (Debian: apt-get install ${pkg})\n`)
    process.exit(1)
  }
}
const ROWS = Number(process.env.BENCH_FEATURE_ROWS ?? 1_000_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
// z6 tiles of a million sources take seconds each: at 16 connections a 5 s run would end before
// most of its first requests, so z6 loads run longer (BENCH_Z6_DURATION, default 3 × DURATION),
// and wrk waits up to 60 s for an answer.
const Z6_DURATION = Number(process.env.BENCH_Z6_DURATION ?? 3 * DURATION)
const TIMEOUT = 60
const RUNS = Number(process.env.BENCH_RUNS ?? 4)
const CONNECTIONS = 16
const CORES = cpus().length
const TILES_PER_ZOOM = 64
const tilesAt = (z) => tilesIn(z, ROWS)
const log = (m) => process.stderr.write(`[tiles] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const fmt = (n) => Math.round(n).toLocaleString('en')
const out = []
// The loads run synchronously (execFileSync): a pooled keep-alive socket the server closed
// meanwhile fails once with "other side closed"; such a request is sent again.
async function fetch (url, init) {
  try {
    return await globalThis.fetch(url, init)
  } catch (err) {
    if (!['UND_ERR_SOCKET', 'EPIPE', 'ECONNRESET'].includes(err.cause?.code)) throw err
    return globalThis.fetch(url, init)
  }
}

const { url, env, db, seed } = await benchDatabase(log)
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench'`)).rows[0].n) !== ROWS) {
  await seed(1, ROWS, { period: "tstzrange('2020-01-01Z'::timestamptz + (n % 1461) * interval '1 day', '2020-01-01Z'::timestamptz + (n % 1461 + 30) * interval '1 day', '[)')" })
}
await db.query('VACUUM (ANALYZE) sources')
const pgUrl = new URL(url)

// The service as npm start runs it, its pool at 2 per core (as bench/cql2.mjs), default tile limits, no tile cache.
const port = await freePort()
const serviceEnv = { ...env, TILES_CACHE_BYTES: '0', DB_POOL_MAX: String(2 * CORES), PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }
for (const k of ['TILES_MAX_FEATURES', 'TILES_MAX_BYTES']) delete serviceEnv[k]
const service = spawn(process.execPath, SERVICE_ARGS, { env: serviceEnv, stdio: ['ignore', 'ignore', 'inherit'] })
process.on('exit', () => service.kill())
const base = `http://127.0.0.1:${port}`
for (let i = 0; i < 200; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
const token = (await (await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
const auth = { authorization: `Bearer ${token}` }

// MapServer 8: MVT in tile mode from a POSTGIS layer on the same rows and attributes (the
// conflict flag as the service finds it), FastCGI under lighttpd.
const msDir = tempDir('bench-tiles-mapserver-')
const msPort = await freePort()
writeFileSync(join(msDir, 'mapserver.conf'), `CONFIG\n  ENV\n    MS_MAP_PATTERN "^${msDir}/"\n  END\n  MAPS\n    "sources" "${msDir}/sources.map"\n  END\nEND\n`)
writeFileSync(join(msDir, 'sources.map'), `MAP
  NAME "sources"
  EXTENT -20037508.34 -20037508.34 20037508.34 20037508.34
  SIZE 256 256
  PROJECTION "init=epsg:3857" END
  OUTPUTFORMAT
    NAME "mvt"
    DRIVER MVT
    FORMATOPTION "EXTENT=4096"
    FORMATOPTION "EDGE_BUFFER=16"
  END
  WEB
    METADATA
      "ows_srs" "EPSG:3857 EPSG:900913 EPSG:4326"
      "ows_enable_request" "*"
    END
  END
  LAYER
    NAME "sources"
    TYPE POLYGON
    STATUS ON
    CONNECTIONTYPE POSTGIS
    CONNECTION "host=${pgUrl.hostname} port=${pgUrl.port} dbname=${pgUrl.pathname.slice(1)} user=${pgUrl.username || 'postgres'}"
    DATA "geom from (select s.id, s.feature_id, lower(s.period) as start_at, upper(s.period) as end_at, s.area_m2, exists (select 1 from source_conflict_pairs p where p.source_id = s.id) as conflict, s.geom from sources s where s.organisation = 'bench') as t using unique id using srid=4326"
    PROCESSING "CLOSE_CONNECTION=DEFER"
    METADATA
      "gml_include_items" "all"
      "gml_types" "auto"
      "ows_srs" "EPSG:3857 EPSG:900913 EPSG:4326"
    END
    PROJECTION "init=epsg:4326" END
    CLASS
      STYLE COLOR 0 0 255 END
    END
  END
END
`)
writeFileSync(join(msDir, 'lighttpd.conf'), `server.document-root = "${msDir}"
server.port = ${msPort}
server.bind = "127.0.0.1"
server.modules = ("mod_fastcgi")
server.errorlog = "${msDir}/error.log"
fastcgi.server = ( "/mapserver" => (( "bin-path" => "/usr/lib/cgi-bin/mapserv", "socket" => "${msDir}/fcgi.sock", "check-local" => "disable", "max-procs" => ${CORES}, "bin-environment" => ("MAPSERVER_CONFIG_FILE" => "${msDir}/mapserver.conf") )) )
`)
// Its own process group, so that its FastCGI mapserv children are stopped with it.
const lighttpd = spawn('lighttpd', ['-D', '-f', join(msDir, 'lighttpd.conf')], { stdio: 'ignore', detached: true })
process.on('exit', () => { try { process.kill(-lighttpd.pid, 'SIGKILL') } catch {} })
const msBase = `http://127.0.0.1:${msPort}`
const msPath = ({ z, x, y }) => `/mapserver?map=sources&mode=tile&tilemode=gmap&tile=${x}+${y}+${z}&layers=all&map.imagetype=mvt`
for (let i = 0; i < 100; i++) { try { if ((await fetch(`${msBase}${msPath({ z: 0, x: 0, y: 0 })}`)).ok) break } catch {} await sleep(100) }

const { statementsOf, files: pgbenchFiles, run: pgbench, close: closePgbench } = await tilePgbench(url, { log })
const { EXTENT } = await import('../dist/tiles/tile-matrix.js')

function load (target, paths, duration, headers) {
  const s = { url: target === 'mapserver' ? msBase : base, connections: CONNECTIONS, duration, timeout: TIMEOUT, token: target === 'mapserver' ? undefined : token, headers, kind: 'paths', paths, client: 'wrk' }
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  log(`${target}: ${r.rps.toFixed(1)} tiles/s, p50 ${r.p50} ms, status ${JSON.stringify(r.statusCodes)}, errors ${r.errors}, timeouts ${r.timeouts}`)
  if (r.non2xx > 0 || r.errors > 0) log(`${target}: ${r.non2xx} answers not 2xx/3xx, ${r.errors} errors`)
  // Tiles/s counts tiles: wrk's rate counts every answer, a 503 too.
  return { ...r, rps: r.total > 0 ? (r.rps * (r.total - r.non2xx)) / r.total : 0, failedShare: r.total > 0 ? r.non2xx / r.total : 0 }
}
// MapServer's processes go on with requests that wrk gave up on or left queued in lighttpd; wait
// until PostgreSQL is idle (then cancel what is left) so that they do not slow the next load.
async function drain () {
  let cancelled = 0
  for (let quiet = 0, i = 0; quiet < 2 && i < 60; i++) {
    const busy = Number((await db.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`)).rows[0].n)
    if (busy > 0 && i >= 20) cancelled += Number((await db.query(`SELECT count(pg_cancel_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`)).rows[0].n)
    quiet = busy === 0 ? quiet + 1 : 0
    await sleep(500)
  }
  if (cancelled > 0) log(`cancelled ${cancelled} statements MapServer was still running`)
}

const status = () => readFileSync(`/proc/${service.pid}/status`, 'utf8')
const vmHwmMb = () => Number(/VmHWM:\s+(\d+)/.exec(status())[1]) / 1024

const table = [`| zoom (tiles) | service tiles/s | pgbench ST_AsMVT tps, ${CONNECTIONS} / ${CORES} clients | service × pgbench at its best (min–max) | service 304/s (one tile, If-None-Match) | bound × pgbench at its best | MapServer tiles/s | service × MapServer (min–max) |`, '|---|---|---|---|---|---|---|---|']
const sizesTable = ['| zoom | service tile bytes p50 / max | features p50 / max (statements per tile) | MapServer tile bytes p50 / max | cold 200 ms p50 | 304 ms p50 |', '|---|---|---|---|---|---|']
const range = (xs) => `${median(xs).toFixed(2)}× (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
let z6Peak = 0
// MapServer's tiles fetched one at a time for their sizes (a z6 tile of a million sources takes it seconds).
const MS_SAMPLE = 5
for (const z of [14, 10, 6]) {
  const tiles = tilesAt(z)
  log(`z${z}: ${tiles.length} tiles`)
  // One request at a time: sizes, cold and 304 latency.
  const sizes = []; const msSizes = []; const cold = []; const revalidated = []
  for (const [i, tile] of tiles.slice(0, 20).entries()) {
    let t0 = performance.now()
    const res = await fetch(base + servicePath(tile), { headers: auth })
    const body = Buffer.from(await res.arrayBuffer())
    cold.push(performance.now() - t0)
    if (res.status !== 200 && res.status !== 204) throw new Error(`service ${servicePath(tile)}: ${res.status} ${body}`)
    sizes.push(body.length)
    t0 = performance.now()
    const again = await fetch(base + servicePath(tile), { headers: { ...auth, 'if-none-match': res.headers.get('etag') } })
    await again.arrayBuffer()
    revalidated.push(performance.now() - t0)
    if (again.status !== 304) throw new Error(`service ${servicePath(tile)} with If-None-Match: ${again.status}`)
    if (i >= MS_SAMPLE) continue
    const ms = await fetch(msBase + msPath(tile), { signal: AbortSignal.timeout(TIMEOUT * 1000) })
    const msBody = Buffer.from(await ms.arrayBuffer())
    if (ms.status !== 200 || !/protobuf|vector-tile/.test(ms.headers.get('content-type') ?? '')) throw new Error(`MapServer ${msPath(tile)}: ${ms.status} ${ms.headers.get('content-type')} ${msBody.toString().slice(0, 300)}`)
    msSizes.push(msBody.length)
  }
  const perTile = []
  for (const tile of tiles) perTile.push(await statementsOf(tile))
  const features = perTile.slice(0, 10).map((t) => t.features)
  const statementsPerTile = perTile.map((t) => t.mvt.length)
  const mvtFiles = pgbenchFiles(`z${z}`, perTile)
  const paths = tiles.map(servicePath)
  const msPaths = tiles.map(msPath)
  const duration = z === 6 ? Z6_DURATION : DURATION
  // The floor of the service's own work per tile: 304s of one tile (auth, the change counters,
  // the ETag; no drawing).
  const first = await fetch(base + paths[0], { headers: auth })
  await first.arrayBuffer()
  const notModified = { 'if-none-match': first.headers.get('etag') }
  // Warm-up: the service (its statements prepared, the pages cached) and MapServer.
  load('service', paths, duration)
  load('mapserver', msPaths, duration); await drain()
  const svc = []; const svcFailed = []; const svc304 = []; const pgMany = []; const pgFew = []; const ms = []
  const steps = [
    () => {
      if (z === 6) writeFileSync(`/proc/${service.pid}/clear_refs`, '5')
      const r = load('service', paths, duration)
      svc.push(r.rps); svcFailed.push(r.failedShare)
      if (z === 6) z6Peak = Math.max(z6Peak, vmHwmMb())
      svc304.push(load('service 304', [paths[0]], DURATION, notModified).rps)
    },
    () => {
      pgMany.push(pgbench(mvtFiles, CONNECTIONS, duration)); pgFew.push(pgbench(mvtFiles, CORES, duration))
    },
    async () => { ms.push(load('mapserver', msPaths, duration).rps); await drain() }
  ]
  for (let i = 0; i < RUNS; i++) for (const step of i % 2 === 0 ? steps : [...steps].reverse()) await step()
  const pgBest = pgMany.map((m, i) => Math.max(m, pgFew[i]))
  const bound = pgBest.map((p, i) => 1 / (1 / svc304[i] + 1 / p) / p)
  const msRatio = ms.every((m) => m > 0) ? range(svc.map((v, i) => v / ms[i])) : `— (MapServer answered ${ms.filter((m) => m > 0).length} of ${RUNS} rounds within ${TIMEOUT} s)`
  const failed = Math.max(...svcFailed) > 0 ? ` (not 2xx: ${svcFailed.map((f) => `${Math.round(f * 100)} %`).join(', ')} of the answers)` : ''
  table.push(`| z${z} (${tiles.length}) | ${fmt(median(svc))}${failed} | ${fmt(median(pgMany))} / ${fmt(median(pgFew))} | **${range(svc.map((v, i) => v / pgBest[i]))}** | ${fmt(median(svc304))} | ${median(bound).toFixed(2)}× | ${median(ms).toFixed(1)} | **${msRatio}** |`)
  sizesTable.push(`| z${z} | ${fmt(pct(sizes, 0.5))} / ${fmt(Math.max(...sizes))} | ${fmt(pct(features, 0.5))} / ${fmt(Math.max(...features))} (${Math.min(...statementsPerTile)}–${Math.max(...statementsPerTile)}) | ${fmt(pct(msSizes, 0.5))} / ${fmt(Math.max(...msSizes))} | ${pct(cold, 0.5).toFixed(1)} | ${pct(revalidated, 0.5).toFixed(1)} |`)
}

out.push(`### Vector tiles on ${ROWS.toLocaleString('en')} sources (${CONNECTIONS} connections, fresh requests, median of ${RUNS} rounds of ${DURATION} s, z6 ${Z6_DURATION} s, in ABBA order)`, '', ...table, '', ...sizesTable, '')
out.push(`- Peak RSS of the service (VmHWM) while serving z6 tiles at ${CONNECTIONS} connections: ${Math.round(z6Peak)} MB.`)
out.push(`- Service: DB_POOL_MAX=${2 * CORES} (so tiles drawn at once: TILES_CONCURRENCY 4 capped at ${2 * CORES - 1}), TILES_MAX_FEATURES ${MAX_FEATURES}, TILES_MAX_BYTES ${MAX_BYTES} (defaults); tiles of extent ${EXTENT}. Sizes and latencies over the first ${Math.min(20, TILES_PER_ZOOM)} tiles of each zoom (features over the first 10, MapServer's sizes over the first ${MS_SAMPLE}), one request at a time. Bound: 1 / (1 / 304s + 1 / pgbench), what the service could reach if each tile cost it a 304's work plus pgbench's statement, on the same cores.`)
process.stdout.write(`${out.join('\n')}\n`)
await closePgbench()
await db.end()
process.exit(0)
