// Issue 34: what keeping every version costs. The service (dist/main.cjs, as `npm start`, server
// backend) and pgbench on one throwaway PostGIS (or BENCH_DATABASE_URL), every ratio from two
// measurements of this one run, taken in alternating rounds (ABAB) so that drift on the shared
// machine hits both sides alike. One client each side (a request at a time; pgbench -c 1
// -M prepared): the cost of one write or read, not the machine's peak.
//   post     a one-feature POST with the history trigger (sources_versions_insert) on, against the
//            same with it disabled: what history adds to the write of the release before
//   patch    PATCH of end_at (merge patch, If-Match) against pgbench sending the same change as one
//            UPDATE of `sources` (the same triggers fire: version, history, conflicts, tiles)
//   put500   PUT of a 500-vertex polygon against pgbench's UPDATE to the same polygon, sent
//            with each UPDATE as a parameter (hex EWKB), as any client changing a geometry
//            sends it; and, for comparison, against the polygon as a constant of pgbench's
//            prepared statement (parsed once per connection, never sent again)
//   asof     GET /sources/?id=…&as_of=… (the version held then) against GET by id
//   bytes    bytes of source_versions (heap, index, TOAST) per version, against sources per row
// Over BENCH_HISTORY_ROWS sources (default 100,000) with 3 versions each (seeded in SQL: the
// second and third versions by two UPDATEs, with the conflict and tile triggers off while they
// run, since they change nothing those triggers keep). BENCH_RUNS rounds (default 3) of
// BENCH_DURATION s (default 5). The service's client is node:http with a keep-alive agent (about
// 0.1 ms of CPU a request where fetch() takes ~0.4–0.9 ms, bench/RESULTS.md "Fast and plain path"):
// one request at a time, the client's own CPU is part of every measured latency, as pgbench's is
// of its own. Prints Markdown. Usage: npm run build && node bench/history.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import http from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'
import { ring } from './bodies.mjs'

const ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 100_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const log = (m) => process.stderr.write(`[history] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, env, db, seed } = await benchDatabase(log)
const count = async () => Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench'`)).rows[0].n)
if (await count() !== ROWS) {
  await seed(1, ROWS)
  const t0 = Date.now()
  await db.query('ALTER TABLE sources DISABLE TRIGGER sources_conflicts_update, DISABLE TRIGGER sources_tile_changes_update')
  await db.query(`UPDATE sources SET period = period WHERE organisation = 'bench'`)
  await sleep(20)
  await db.query(`UPDATE sources SET period = period WHERE organisation = 'bench'`)
  await db.query('ALTER TABLE sources ENABLE TRIGGER sources_conflicts_update, ENABLE TRIGGER sources_tile_changes_update')
  log(`versions 2 and 3 of ${ROWS} sources in ${Date.now() - t0} ms`)
}
// BENCH_HISTORY_TILE_TRIGGERS=off: both sides without the tile-change triggers (sql/016), whose
// per-statement cost can hide what history adds; the same for the service and pgbench.
const tilesOff = process.env.BENCH_HISTORY_TILE_TRIGGERS === 'off'
if (tilesOff) await db.query('ALTER TABLE sources DISABLE TRIGGER sources_tile_changes_insert, DISABLE TRIGGER sources_tile_changes_update, DISABLE TRIGGER sources_tile_changes_delete')
await db.query('VACUUM (ANALYZE) sources, source_versions')
// An instant when every seeded source held its version 2.
const asOf = (await db.query(`SELECT max(recorded_at) AS at FROM source_versions WHERE version = 2 AND source_id <= 'src_' || lpad('${ROWS}', 22, '0')`)).rows[0].at.toISOString()

const port = await freePort()
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => service.kill())
const base = `http://127.0.0.1:${port}`
for (let i = 0; i < 200; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
const token = (await (await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
const auth = { authorization: `Bearer ${token}` }

const idOf = (n) => `src_${String(n).padStart(22, '0')}`
const cellOf = (n) => [(n % 3000) * 0.01 - 15 + 0.0025, (Math.floor(n / 3000) % 3000) * 0.01 - 15 + 0.0025]
const random = () => 1 + Math.floor(Math.random() * ROWS)

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
/** One request over the kept-alive connection; the answer with fetch()'s status, headers.get and text. */
function call (url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) }, agent }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        resolve({ status: res.statusCode, headers: { get: (name) => res.headers[name] ?? null }, text: async () => text, arrayBuffer: async () => text })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Requests per second of `send` over DURATION s, one at a time; any answer but `status` stops the run. */
async function service1 (name, status, send) {
  let done = 0
  const end = Date.now() + DURATION * 1000
  while (Date.now() < end) {
    const res = await send(done)
    if (res.status !== status) throw new Error(`${name}: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
    done++
  }
  const rps = done / DURATION
  log(`${name}: ${rps.toFixed(1)} req/s`)
  return rps
}

const pgDir = tempDir('bench-history-pgbench-')
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
function pgbench (name, script, defines = []) {
  const file = join(pgDir, `${name}.sql`)
  writeFileSync(file, script)
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', '1', '-T', String(DURATION), '-D', `rows=${ROWS}`, ...defines.flatMap((d) => ['-D', d]), '-f', file, url], { encoding: 'utf8', maxBuffer: 1 << 24 })
  if (r.status !== 0) throw new Error(`pgbench ${name}: ${r.stderr}`)
  const tps = Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
  log(`pgbench ${name}: ${tps.toFixed(1)} tps`)
  return tps
}

/** ABAB: RUNS rounds of each side; the median of each, and the median of the per-round ratios a/b. */
async function paired (a, b) {
  const as = []; const bs = []
  for (let r = 0; r < RUNS; r++) {
    if (r % 2 === 0) { as.push(await a()); bs.push(await b()) } else { bs.push(await b()); as.push(await a()) }
  }
  return { a: median(as), b: median(bs), ratio: median(as.map((x, i) => x / bs[i])) }
}

// The versions the service's writes need in If-Match: read before each round (outside its timing).
const versions = new Map()
async function loadVersions (ns) {
  const { rows } = await db.query('SELECT id, version FROM sources WHERE id = any($1::text[])', [ns.map(idOf)])
  for (const r of rows) versions.set(r.id, r.version)
}
async function pick (k) {
  const ns = Array.from({ length: k }, random)
  await loadVersions(ns)
  return ns
}
// `prepare(n)`: the request body for source n, made before the round for its first 600 a
// second of BENCH_DURATION (three times what a round of PUTs sends here), so that the client's
// JSON.stringify of a 500-vertex polygon (~0.19 ms) is not timed as the service's, as pgbench's
// parameters are ready at once.
async function changeRound (name, send, prepare = () => undefined) {
  const ns = await pick(20_000)
  const bodies = new Map(ns.slice(0, 600 * DURATION).map((n) => [n, prepare(n)]))
  return await service1(name, 200, async (i) => {
    const n = ns[i % ns.length]
    const id = idOf(n)
    const res = await send(id, n, versions.get(id), bodies.get(n) ?? prepare(n))
    const tag = /^W\/"(\d+)"$/.exec(res.headers.get('etag') ?? '')
    if (tag !== null) versions.set(id, Number(tag[1]))
    return res
  })
}

const out = {}

let k = 0
const run = Date.now().toString(36)
const newFeature = () => {
  const i = k++
  const x = -170 + (i % 3000) * 0.01; const y = 60 + Math.floor(i / 3000) * 0.01
  return { type: 'FeatureCollection', features: [{ type: 'Feature', id: `h-${run}-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: [[[x, y], [x + 0.005, y], [x + 0.005, y + 0.005], [x, y + 0.005], [x, y]]] } }] }
}
const post = (name) => service1(name, 201, () => call(`${base}/sources`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(newFeature()) }))
out.post = await paired(() => post('POST, history on'), async () => {
  await db.query('ALTER TABLE sources DISABLE TRIGGER sources_versions_insert')
  try { return await post('POST, history off') } finally { await db.query('ALTER TABLE sources ENABLE TRIGGER sources_versions_insert') }
})

let flip = 0
out.patch = await paired(
  () => changeRound('PATCH end_at', (id, _n, version) => call(`${base}/sources/?id=${id}`, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/merge-patch+json', 'if-match': `W/"${version}"` },
    body: `{"properties":{"end_at":"2024-02-${String(2 + (flip++ % 20)).padStart(2, '0')}T00:00:00Z"}}`
  })),
  () => pgbench('patch', `\\set n random(1, :rows)
\\set d random(2, 21)
UPDATE sources SET period = tstzrange(lower(period), '2024-02-01Z'::timestamptz + make_interval(days => :d::int), '[)') WHERE id = 'src_' || lpad(:n::text, 22, '0');
`))

const ring500 = ring(500, 0, 0)
const wkt = `SRID=4326;POLYGON((${ring500[0].map(([x, y]) => `${x} ${y}`).join(',')}))`
const put = () => changeRound('PUT 500 vertices', (id, _n, version, body) => call(`${base}/sources/?id=${id}`, {
  method: 'PUT',
  headers: { ...auth, 'content-type': 'application/json', 'if-match': `W/"${version}"` },
  body
}), (n) => {
  const [cx, cy] = cellOf(n)
  const coordinates = [ring500[0].map(([x, y]) => [+(x + cx).toFixed(7), +(y + cy).toFixed(7)])]
  return JSON.stringify({ type: 'Feature', id: `seed-${n}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates } })
})
const putSql = (polygon) => `\\set n random(1, :rows)
\\set xi :n % 3000
\\set yi (:n / 3000) % 3000
\\set dx :xi * 0.01 - 14.9975
\\set dy :yi * 0.01 - 14.9975
UPDATE sources SET feature_id = 'seed-' || :n, geom = ST_Translate(${polygon}, :dx::float8, :dy::float8), period = tstzrange('2024-01-01Z', '2024-02-01Z', '[)') WHERE id = 'src_' || lpad(:n::text, 22, '0');
`
// pgbench sends the polygon with every UPDATE, as any client that changes a geometry must: a
// parameter of the prepared statement (hex EWKB, 8 KB of binary), parsed by PostgreSQL on each
// execution, as the service's EWKB is.
const polygonHex = (await db.query('SELECT encode(ST_AsEWKB($1::geometry), \'hex\') AS hex', [wkt])).rows[0].hex
out.put500 = await paired(put, () => pgbench('put500', putSql(':polygon::geometry'), [`polygon=${polygonHex}`]))
// For comparison: the polygon as a constant of the prepared statement, parsed once per
// connection when it is planned, so pgbench never sends it again.
out.put500constant = await paired(put, () => pgbench('put500constant', putSql(`'${wkt}'::geometry`)))

const get = (name, query) => service1(name, 200, () => call(`${base}/sources/?id=${idOf(random())}${query}`, { headers: auth }))
out.asof = await paired(() => get('GET by id', ''), () => get('GET as_of', `&as_of=${encodeURIComponent(asOf)}`))

const size = (await db.query(`SELECT pg_total_relation_size('source_versions')::float8 AS versions_bytes, (SELECT count(*) FROM source_versions)::float8 AS versions,
  pg_total_relation_size('sources')::float8 AS sources_bytes, (SELECT count(*) FROM sources)::float8 AS sources`)).rows[0]

const f = (x, d = 1) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
const lines = [
  `History on ${f(ROWS, 0)} sources with 3 versions each (server backend${tilesOff ? ', tile-change triggers off on both sides' : ''}), one client each side, ${RUNS} rounds of ${DURATION} s, medians:`,
  '',
  '| measure | service | baseline | ratio (median of rounds) | target |',
  '|---|---|---|---|---|',
  `| single POST, history on vs off | ${f(out.post.a)} req/s | ${f(out.post.b)} req/s | ${f(out.post.ratio, 2)}× | ≥ 0.9× |`,
  `| PATCH end_at vs pgbench UPDATE | ${f(out.patch.a)} req/s | ${f(out.patch.b)} tps | ${f(out.patch.ratio, 2)}× | ≥ 0.7× |`,
  `| PUT 500 vertices vs pgbench UPDATE (polygon sent with each) | ${f(out.put500.a)} req/s | ${f(out.put500.b)} tps | ${f(out.put500.ratio, 2)}× | ≥ 0.7× |`,
  `| PUT 500 vertices vs pgbench UPDATE (polygon a constant of the prepared statement) | ${f(out.put500constant.a)} req/s | ${f(out.put500constant.b)} tps | ${f(out.put500constant.ratio, 2)}× | — |`,
  `| as-of GET vs GET by id (latency) | ${f(1000 / out.asof.b, 2)} ms | ${f(1000 / out.asof.a, 2)} ms | ${f(out.asof.ratio, 2)}× | ≤ 1.5× |`,
  '',
  `source_versions: ${f(size.versions, 0)} versions in ${f(size.versions_bytes / 2 ** 20)} MiB, ${f(size.versions_bytes / size.versions, 0)} bytes per version (heap, primary key, TOAST); sources: ${f(size.sources_bytes / size.sources, 0)} bytes per row with its indexes. Each change adds one version row.`
]
console.log(lines.join('\n'))
service.kill()
if (tilesOff) await db.query('ALTER TABLE sources ENABLE TRIGGER sources_tile_changes_insert, ENABLE TRIGGER sources_tile_changes_update, ENABLE TRIGGER sources_tile_changes_delete')
await db.end()
process.exit(0)
