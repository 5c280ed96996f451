// OGC API – Features Part 2 reads: first pages of /collections/sources/items (limit=100, a 0.1°
// window) with crs=EPSG:28992 against the same pages in CRS84 (the ratio asked: ≥ 0.85×), and
// against pgbench running the service's own EPSG:28992 statement (its ST_Transform; compiled by
// the service's build, as bench/cql2.mjs does; ≥ 0.6×), each side at its best (the service's pool
// at 2 per core under wrk; pgbench at one client per core and at 16, the faster). Rounds
// alternate which load goes first. Seeds BENCH_FEATURE_ROWS sources (default 1,000,000) as
// bench/features.mjs does. Needs wrk. BENCH_RUNS rounds (default 4) of BENCH_DURATION s (default 5).
// Prints Markdown. Usage: npm run build && node bench/crs.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'

if (spawnSync('wrk', ['--version']).error !== undefined) {
  process.stderr.write('bench/crs.mjs needs wrk (Debian: apt-get install wrk)\n')
  process.exit(1)
}
const ROWS = Number(process.env.BENCH_FEATURE_ROWS ?? 1_000_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 4)
const CONNECTIONS = 16
const CORES = cpus().length
const SIZE = 0.1
const log = (m) => process.stderr.write(`[crs] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, env, db, seed } = await benchDatabase(log)
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench'`)).rows[0].n) !== ROWS) {
  await seed(1, ROWS, { period: "tstzrange('2020-01-01Z'::timestamptz + (n % 1461) * interval '1 day', '2020-01-01Z'::timestamptz + (n % 1461 + 30) * interval '1 day', '[)')", triggers: false })
}
await db.query('VACUUM (ANALYZE) sources')

const port = await freePort()
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, DB_POOL_MAX: String(2 * CORES), PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => service.kill())
const base = `http://127.0.0.1:${port}`
for (let i = 0; i < 600; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
const token = (await (await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token

const yRows = Math.floor(ROWS / 3000)
const window = () => {
  const x = -15 + Math.random() * (30 - SIZE)
  const y = -15 + Math.random() * Math.max(0.01, yRows * 0.01 - SIZE)
  return [x, y, x + SIZE, y + SIZE].map((v) => Number(v.toFixed(4)))
}
const RD = 'http://www.opengis.net/def/crs/EPSG/0/28992'
const windows = Array.from({ length: 200 }, window)
const paths = (crs) => windows.map((w) => `/collections/sources/items?limit=100&bbox=${w.join(',')}${crs === undefined ? '' : `&crs=${encodeURIComponent(crs)}`}`)

function load (list) {
  const s = { url: base, connections: CONNECTIONS, duration: DURATION, token, kind: 'paths', paths: list, client: 'wrk' }
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  if (r.non2xx > 0 || r.errors > 0) log(`${r.non2xx} answers not 2xx, ${r.errors} errors: ${JSON.stringify(r.statusCodes)}`)
  log(`service: ${Math.round(r.rps)} req/s`)
  return r.rps
}

// pgbench on the service's own EPSG:28992 statement (a bbox first page: one statement, the page and its count).
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const pgDir = tempDir('bench-crs-pgbench-')
const { compileByShape, queryBuilder } = await import('../dist/db/compiled-query.js')
const listing = await import('../dist/sources/sources.listing.js')
const { searchBoxes } = await import('../dist/sources/search-box.js')
const CAP = 100_000
const input = {
  scope: { organisation: 'bench' }, filter: { boxes: searchBoxes(101.5, 71.5, 101.6, 71.6) },
  page: { sort: [{ field: 'id', descending: false }], limit: 100 }, cap: CAP, output: { crs: { srid: 28992, northFirst: false } }
}
const vars = new Map([['bench', ':org'], [100, ':lim'], [CAP, ':cap'], [101.5, ':x'], [71.5, ':y'], [101.6, ':x2'], [71.6, ':y2']])
const q = compileByShape((i) => listing.countedPageQuery(queryBuilder, i), listing.LIST_INPUT_SHAPE_KEYS)(input)
const statement = q.sql.replace(/(?<!:):(?!:)/g, "' || chr(58) || '").replace(/\$(\d+)/g, (_, n) => {
  const v = q.parameters[Number(n) - 1]
  if (!vars.has(v)) throw new Error(`no pgbench variable for parameter ${n} (${v})`)
  return vars.get(v)
}).replace(/\s*\n\s*/g, ' ') + ';'
if (!statement.includes('ST_Transform')) throw new Error('the statement does not transform')
const script = `\\set xi random(0, ${Math.round((30 - SIZE) * 1000)})
\\set yi random(0, ${Math.max(1, Math.round((yRows * 0.01 - SIZE) * 1000))})
\\set x -15 + :xi / 1000.0
\\set y -15 + :yi / 1000.0
\\set x2 :x + ${SIZE}
\\set y2 :y + ${SIZE}
${statement}
`
const file = join(pgDir, 'crs.sql')
writeFileSync(file, script)
function pgbench (clients) {
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(2, clients)), '-T', String(DURATION), '-D', 'org=bench', '-D', 'lim=100', '-D', `cap=${CAP}`, '-f', file, url], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`pgbench: ${r.stderr}`)
  const tps = Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
  log(`pgbench (${clients} clients): ${Math.round(tps)} tps`)
  return tps
}

load(paths(RD).slice(0, 50))
load(paths(undefined).slice(0, 50))
const rd = []; const plain = []; const pgMany = []; const pgFew = []
for (let i = 0; i < RUNS; i++) {
  if (i % 2 === 1) plain.push(load(paths(undefined)))
  rd.push(load(paths(RD)))
  if (i % 2 === 0) plain.push(load(paths(undefined)))
  pgMany.push(pgbench(CONNECTIONS))
  pgFew.push(pgbench(CORES))
}
const pg = pgMany.map((m, i) => Math.max(m, pgFew[i]))
const range = (xs) => `${median(xs).toFixed(2)}× (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
process.stdout.write([
  `### crs=EPSG:28992 on ${ROWS.toLocaleString('en')} sources (${CONNECTIONS} connections, limit=100, first pages in a ${SIZE}° window, median of ${RUNS} × ${DURATION} s)`, '',
  '| service req/s, crs=EPSG:28992 | the same in CRS84 | 28992 × CRS84 (min–max) | pgbench tps of the 28992 statement, 16 / cores clients | 28992 × pgbench at its best (min–max) |',
  '|---|---|---|---|---|',
  `| ${Math.round(median(rd)).toLocaleString('en')} | ${Math.round(median(plain)).toLocaleString('en')} | **${range(rd.map((v, i) => v / plain[i]))}** | ${Math.round(median(pgMany)).toLocaleString('en')} / ${Math.round(median(pgFew)).toLocaleString('en')} | **${range(rd.map((v, i) => v / pg[i]))}** |`, ''
].join('\n'))
await db.end()
process.exit(0)
