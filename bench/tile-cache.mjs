// The tile cache (TILES_CACHE_BYTES, issue 50) on BENCH_FEATURE_ROWS sources (default 1,000,000,
// seeded as bench/tiles.mjs seeds them), at z14, z10 and z6, in one run:
// - warm: one tile asked again and again (wrk, 16 connections, no If-None-Match) of the service
//   with its default cache, its hit ratio over the load from its /metrics, against pgbench
//   running the service's own statement for that tile (the MVT and its change counters);
// - cold: the same 64 tiles as bench/tiles.mjs, fresh requests, of the same build with
//   TILES_CACHE_BYTES=0 (every tile drawn: the path of a first request), against pgbench over the
//   same 64 tiles;
// - the floor of a hit: 304s of the same tile (auth, the change counters, the ETag; a hit adds
//   the lookup and the body), against pgbench's tile.
// pgbench at 16 clients and at one per core, the faster taken. Also, for each, the CPU a tile took
// every process on its path (wrk, the service and PostgreSQL; pgbench and PostgreSQL), read from
// /proc (bench/cpu.mjs): on a machine shared with other loads, their ratio is the ratio of
// throughputs on two cores of one's own, where tiles a second measure the neighbours too. Each round runs the four loads,
// in the reverse order every other round (ABBA); a ratio is the median of the rounds' ratios.
// BENCH_RUNS rounds (default 3) of BENCH_DURATION s (default 5; cold z6 BENCH_Z6_DURATION, default
// 2 × that); BENCH_DATABASE_URL reuses a seeded `bench` database. Needs wrk. Prints Markdown.
// Usage: npm run build && node bench/tile-cache.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { clusterCpuMs, postmasterPid, processCpuMs } from './cpu.mjs'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort } from './setup.mjs'
import { servicePath, tilePgbench, tilesAt } from './tile-statements.mjs'

if (spawnSync('wrk', ['--version']).error !== undefined) {
  process.stderr.write('bench/tile-cache.mjs needs wrk (Debian: apt-get install wrk)\n')
  process.exit(1)
}
const ROWS = Number(process.env.BENCH_FEATURE_ROWS ?? 1_000_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const Z6_DURATION = Number(process.env.BENCH_Z6_DURATION ?? 2 * DURATION)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const ZOOMS = (process.env.BENCH_ZOOMS ?? '14,10,6').split(',').map(Number)
const CONNECTIONS = 16
const CORES = cpus().length
const METRICS_TOKEN = 'bench-metrics-token-0123456789'
const log = (m) => process.stderr.write(`[tile-cache] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const fmt = (n) => Math.round(n).toLocaleString('en')
const range = (xs) => `${median(xs).toFixed(2)}× (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`

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
  await db.query('VACUUM (ANALYZE) sources')
}

// Two services as npm start runs them, each its pool at 2 per core (as bench/tiles.mjs), default
// tile limits: one with the default cache, one without.
async function startService (extra) {
  const port = await freePort()
  const serviceEnv = { ...env, ...extra, DB_POOL_MAX: String(2 * CORES), PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', METRICS_TOKEN }
  for (const k of ['TILES_MAX_FEATURES', 'TILES_MAX_BYTES', 'TILES_CACHE_BYTES']) if (!(k in extra)) delete serviceEnv[k]
  const child = spawn(process.execPath, SERVICE_ARGS, { env: serviceEnv, stdio: ['ignore', 'ignore', 'inherit'] })
  process.on('exit', () => child.kill())
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 300; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
  return { child, base }
}
const cached = await startService({})
const uncached = await startService({ TILES_CACHE_BYTES: '0' })
const token = (await (await fetch(`${cached.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
const auth = { authorization: `Bearer ${token}` }

/** The cache's lookups so far, from /metrics. */
async function lookups () {
  const text = await (await fetch(`${cached.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
  const value = (result) => Number(new RegExp(`^source_registry_tile_cache_lookups_total\\{result="${result}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0)
  const bytes = Number(/^source_registry_tile_cache_bytes (\S+)$/m.exec(text)?.[1] ?? 0)
  return { hit: value('hit'), miss: value('miss'), bytes }
}

const postmaster = await postmasterPid(db)
const clusterCpu = () => clusterCpuMs(postmaster)
/** Tiles a second, and the CPU ms a tile took wrk, the service and PostgreSQL together. */
function load (service, paths, duration, headers) {
  const s = { url: service.base, connections: CONNECTIONS, duration, timeout: 60, token, headers, kind: 'paths', paths, client: 'wrk' }
  const [svc0, pg0] = [processCpuMs(service.child.pid), clusterCpu()]
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  const [svc, pgMs] = [processCpuMs(service.child.pid) - svc0, clusterCpu() - pg0]
  const n = Math.max(1, r.total)
  const cpuMs = (svc + pgMs + r.generatorCpuMs) / n
  log(`${service === cached ? 'cached' : 'uncached'} ${paths.length} path(s)${headers ? ' 304' : ''}: ${r.rps.toFixed(1)} tiles/s, p50 ${r.p50} ms, CPU ms a tile ${cpuMs.toFixed(3)} (wrk ${(r.generatorCpuMs / n).toFixed(3)}, service ${(svc / n).toFixed(3)}, PostgreSQL ${(pgMs / n).toFixed(3)}), status ${JSON.stringify(r.statusCodes)}, errors ${r.errors}`)
  if (r.non2xx > 0 || r.errors > 0) log(`${r.non2xx} answers not 2xx/3xx, ${r.errors} errors`)
  return { rps: r.total > 0 ? (r.rps * (r.total - r.non2xx)) / r.total : 0, cpuMs }
}
/** pgbench at 16 clients and at one per core: the faster's tiles a second, and its CPU ms a tile. */
function pgBest (files, duration) {
  const a = pg.run(files, CONNECTIONS, duration, clusterCpu)
  const b = pg.run(files, CORES, duration, clusterCpu)
  return a.tps >= b.tps ? a : b
}

const vmHwmMb = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
const pg = await tilePgbench(url, { log })
const table = [
  `| zoom | warm tiles/s (hit ratio) | pgbench, that tile | **warm × pgbench** (min–max) | warm × pgbench in CPU a tile | 304 × pgbench (CPU) | cold tiles/s (64 tiles, no cache) | pgbench, 64 tiles | **cold × pgbench** (min–max) | cold × pgbench in CPU a tile | tile bytes |`,
  '|---|---|---|---|---|---|---|---|---|---|---|'
]
const load1 = loadavg()[0]
for (const z of ZOOMS) {
  const tiles = tilesAt(z, ROWS)
  const one = tiles[0]
  log(`z${z}: warm ${servicePath(one)}, cold over ${tiles.length} tiles`)
  const perTile = []
  for (const tile of tiles) perTile.push(await pg.statementsOf(tile))
  const oneFile = pg.files(`z${z}-one`, [perTile[0]])
  const allFiles = pg.files(`z${z}`, perTile)
  const first = await fetch(cached.base + servicePath(one), { headers: auth })
  const bytes = (await first.arrayBuffer()).byteLength
  const notModified = { 'if-none-match': first.headers.get('etag') }
  const coldDuration = z === 6 ? Z6_DURATION : DURATION
  // Warm-up: statements prepared, pages cached.
  load(cached, [servicePath(one)], DURATION)
  load(uncached, tiles.map(servicePath), coldDuration)
  const warm = []; const hitRatio = []; const pgOne = []; const r304 = []; const cold = []; const pgAll = []
  const steps = [
    async () => {
      const before = await lookups()
      warm.push(load(cached, [servicePath(one)], DURATION))
      const after = await lookups()
      hitRatio.push((after.hit - before.hit) / Math.max(1, after.hit - before.hit + after.miss - before.miss))
    },
    () => { pgOne.push(pgBest(oneFile, DURATION)) },
    () => { r304.push(load(cached, [servicePath(one)], DURATION, notModified)) },
    () => { cold.push(load(uncached, tiles.map(servicePath), coldDuration)) },
    () => { pgAll.push(pgBest(allFiles, coldDuration)) }
  ]
  for (let i = 0; i < RUNS; i++) for (const step of i % 2 === 0 ? steps : [...steps].reverse()) await step()
  const ratio = (xs, ys) => range(xs.map((x, i) => x.rps / ys[i].tps))
  const cpuRatio = (xs, ys) => range(xs.map((x, i) => ys[i].cpuMs / x.cpuMs))
  table.push(`| z${z} | ${fmt(median(warm.map((w) => w.rps)))} (${(median(hitRatio) * 100).toFixed(2)} %) | ${fmt(median(pgOne.map((p) => p.tps)))} | **${ratio(warm, pgOne)}** | ${cpuRatio(warm, pgOne)} | ${cpuRatio(r304, pgOne)} | ${fmt(median(cold.map((c) => c.rps)))} | ${fmt(median(pgAll.map((p) => p.tps)))} | **${ratio(cold, pgAll)}** | ${cpuRatio(cold, pgAll)} | ${fmt(bytes)} |`)
}
const end = await lookups()
process.stdout.write([
  `### Tile cache on ${ROWS.toLocaleString('en')} sources (${CONNECTIONS} connections, median of ${RUNS} rounds of ${DURATION} s, cold z6 ${Z6_DURATION} s, ABBA order; load average ${load1.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end)`,
  '',
  ...table,
  '',
  `- Services: DB_POOL_MAX=${2 * CORES}, default tile limits; warm: TILES_CACHE_BYTES default, cold: TILES_CACHE_BYTES=0. Cache at the end: ${fmt(end.bytes)} bytes; peak RSS (VmHWM) ${Math.round(vmHwmMb(cached.child.pid))} MB cached, ${Math.round(vmHwmMb(uncached.child.pid))} MB uncached.`,
  ''
].join('\n'))
await pg.close()
await db.end()
process.exit(0)
