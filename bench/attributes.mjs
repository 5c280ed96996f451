// Attributes (issue 45) on the server backend, over BENCH_FEATURE_ROWS sources (default
// 1,000,000) that each carry ten attributes, four of them declared by the organisation:
// 1. a single POST and a 1,000-feature POST with ten attributes per feature against the same
//    without attributes (ABBA rounds, target ≥ 0.9×);
// 2. items with a filter on a declared attribute (`hectares BETWEEN a AND a + 0.05`: ~50 of the
//    1M, served by its expression index) against the same request with a bbox that returns as
//    many features (target ≥ 0.9×) and against pgbench running the statements the service runs
//    for it (target ≥ 0.6×), and the plan of the attribute filter;
// 3. bytes per source (the attributes column, its GIN index, the four expression indexes) and
//    per version when only the attributes change.
// Needs wrk (Debian: apt-get install wrk). BENCH_RUNS rounds (default 4) of BENCH_DURATION s
// (default 5). Prints Markdown. Usage: npm run build && node bench/attributes.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort, tempDir } from './setup.mjs'

if (spawnSync('wrk', ['--version']).error !== undefined) {
  process.stderr.write('bench/attributes.mjs needs wrk (Debian: apt-get install wrk)\n')
  process.exit(1)
}
const ROWS = Number(process.env.BENCH_FEATURE_ROWS ?? 1_000_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 4)
const CONNECTIONS = 16
const CORES = cpus().length
const log = (m) => process.stderr.write(`[attributes] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const range = (xs) => `${median(xs).toFixed(2)}× (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const out = [`Machine: ${CORES} cores, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} at the start; ${ROWS.toLocaleString('en')} sources with ten attributes each.`, '']

const { url, env, db, accountId } = await benchDatabase(log)
// The grid of bench/setup.mjs (0.01° squares, 3,000 a row), each with ten attributes; hectares
// takes 20,000 values (n % 20000 / 10), so a 0.05-wide range holds ROWS / 20,000 × 0.5 sources.
const ATTRIBUTES = `jsonb_build_object('parcel_no', 'NL-' || n, 'name', 'Parcel ' || n, 'land_use', (ARRAY['forest','pasture','arable','wetland'])[n % 4 + 1],
  'hectares', (n % 20000) / 10.0, 'owner', 'Owner ' || (n % 997), 'project', 'Carbon 2024', 'planted', to_char(date '2020-01-01' + (n % 1500)::int, 'YYYY-MM-DD'),
  'organic', n % 2 = 0, 'surveyed_at', '2024-02-01T09:30:00Z', 'tags', jsonb_build_array('peat', 'restored'))`
// The seeded rows (a kept BENCH_DATABASE_URL also holds what earlier runs posted).
const have = Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench' AND feature_id LIKE 'seed-%' AND attributes ? 'hectares'`)).rows[0].n)
if (have !== ROWS) {
  await db.query(`DELETE FROM sources WHERE organisation = 'bench' AND feature_id LIKE 'seed-%'`)
  const t0 = Date.now()
  // Triggers off for the seed (23 min with them on a loaded machine): the squares are disjoint, so
  // there are no conflicts to find, and the seed's own versions and events are not what is measured.
  await db.query('SET session_replication_role = replica')
  for (let start = 1; start <= ROWS; start += 100_000) {
    const end = Math.min(start + 100_000 - 1, ROWS)
    await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period, attributes)
      SELECT 'src_' || lpad(n::text, 22, '0'), 'seed-' || n, 'bench', $3::uuid,
        ST_MakeEnvelope((n % 3000) * 0.01 - 15, (n / 3000 % 3000) * 0.01 - 15, (n % 3000) * 0.01 - 14.995, (n / 3000 % 3000) * 0.01 - 14.995, 4326),
        '[2024-01-01Z,2024-02-01Z)', ${ATTRIBUTES}
      FROM generate_series($1::bigint, $2::bigint) AS n`, [start, end, accountId])
  }
  await db.query('RESET session_replication_role')
  log(`seeded ${ROWS} rows in ${Date.now() - t0} ms`)
}
await db.query('VACUUM (ANALYZE) sources')

const port = await freePort()
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, DB_POOL_MAX: String(2 * CORES), PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 2, 'inherit']
})
process.on('exit', () => service.kill())
const base = `http://127.0.0.1:${port}`
for (let i = 0; i < 300; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
const token = (await (await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
const authorised = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

// The organisation declares four of the ten (their expression indexes are built here).
const schema = { type: 'object', properties: { hectares: { type: 'number' }, parcel_no: { type: 'string' }, land_use: { type: 'string' }, planted: { type: 'string', format: 'date' } } }
const current = await fetch(`${base}/organisations/bench/attributes-schema`, { headers: authorised })
const t0 = Date.now()
const put = await fetch(`${base}/organisations/bench/attributes-schema`, { method: 'PUT', headers: { ...authorised, ...(current.ok ? { 'if-match': current.headers.get('etag') } : {}) }, body: JSON.stringify(schema) })
if (!put.ok) throw new Error(`PUT schema: ${put.status} ${await put.text()}`)
log(`schema declared, indexes built in ${Date.now() - t0} ms`)
await db.query('ANALYZE sources')

let tag = 0
function load (scenario) {
  const s = { url: base, connections: CONNECTIONS, token, runTag: `attr-${process.pid}-${tag++}`, ...scenario }
  if (s.amount === undefined) s.duration = DURATION
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  if (r.non2xx > 0 || r.errors > 0) log(`${r.non2xx} answers not 2xx, ${r.errors} errors: ${JSON.stringify(r.statusCodes)}`)
  return r.rps
}

// 1. POSTs with and without attributes (ABBA: on a shared machine the second of two loads is often the faster).
// BENCH_PARTS=filter skips them (and the bytes); =writes skips the filter.
const PARTS = process.env.BENCH_PARTS ?? 'writes,filter'
const posts = []
for (const [name, scenario, unit] of !PARTS.includes('writes') ? [] : [
  ['single POST (req/s)', { kind: 'post', features: 1, vertices: 5 }, 1],
  ['1,000-feature POST (features/s)', { kind: 'post', features: 1000, vertices: 5, amount: 4 * 4, connections: 4 }, 1000]
]) {
  log(name)
  load({ ...scenario, attributes: true }); load(scenario)
  const withA = []; const without = []
  for (let i = 0; i < RUNS; i++) {
    if (i % 2 === 1) without.push(load(scenario) * unit)
    withA.push(load({ ...scenario, attributes: true }) * unit)
    if (i % 2 === 0) without.push(load(scenario) * unit)
  }
  posts.push(`| ${name} | ${Math.round(median(withA)).toLocaleString('en')} | ${Math.round(median(without)).toLocaleString('en')} | **${range(withA.map((v, i) => v / without[i]))}** | ≥ 0.9× |`)
}
if (posts.length > 0) out.push('| write | ten attributes | none | ratio (min–max) | target |', '|---|---|---|---|---|', ...posts, '')

// 2. An attribute filter against bbox and pgbench.
const yRows = Math.floor(ROWS / 3000)
const items = (query) => `/collections/sources/items?limit=100&${new URLSearchParams(query).toString()}`
const hectares = () => Math.floor(Math.random() * 19_990) / 10
// A bbox of 0.07° holds 7 × 7 = 49 squares: as many as a 0.05 range of hectares (50 at 1M).
const box = () => {
  const x = -15 + Math.random() * 29.9
  const y = -15 + Math.random() * Math.max(0.01, yRows * 0.01 - 0.08)
  return [x, y, x + 0.07, y + 0.07].map((v) => Number(v.toFixed(4)))
}
const attributePaths = Array.from({ length: 200 }, () => { const h = hectares(); return items({ filter: `hectares BETWEEN ${h} AND ${(h + 0.05).toFixed(2)}` }) })
const bboxPaths = Array.from({ length: 200 }, () => items({ bbox: box().join(',') }))
// Once more when the first try finds its kept-alive socket closed by the service meanwhile.
const read = async (path) => { try { return await fetch(`${base}${path}`, { headers: authorised }) } catch { return await fetch(`${base}${path}`, { headers: authorised }) } }
const matched = async (path) => (await (await read(path)).json()).numberMatched
log(`features matched: attribute ${await matched(attributePaths[0])}, bbox ${await matched(bboxPaths[0])}`)
function wrk (paths) {
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify({ url: base, connections: CONNECTIONS, duration: DURATION, token, kind: 'paths', paths, client: 'wrk' })], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  if (r.non2xx > 0 || r.errors > 0) log(`${r.non2xx} answers not 2xx, ${r.errors} errors: ${JSON.stringify(r.statusCodes)}`)
  return r.rps
}

const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const pgDir = tempDir('bench-attributes-pgbench-')
const { compileByShape, queryBuilder } = await import('../dist/db/compiled-query.js')
const listing = await import('../dist/sources/sources.listing.js')
const { checkFilter } = await import('../dist/features/filters/cql2.js')
const CAP = 100_000
const checked = checkFilter('hectares BETWEEN 101.5 AND 101.55', 'cql2-text', new Map([['hectares', 'number']]))
if ('error' in checked) throw new Error(checked.error)
const page = { sort: [{ field: 'id', descending: false }], limit: 100 }
const attributeInput = { scope: { organisation: 'bench' }, filter: { expr: checked.expr }, page, cap: CAP }
const { searchBoxes } = await import('../dist/sources/search-box.js')
const bboxInput = { scope: { organisation: 'bench' }, filter: { boxes: searchBoxes(101.5, 71.5, 102.5, 72.5) }, page, cap: CAP }
const vars = new Map([['bench', ':org'], [100, ':lim'], [CAP, ':cap'], [101.5, ':h'], [101.55, ':h2'], [71.5, ':y'], [102.5, ':x2'], [72.5, ':y2']])
function statement (build, input) {
  const q = compileByShape((i) => build(queryBuilder, i), listing.LIST_INPUT_SHAPE_KEYS)(input)
  return { text: q.sql, parameters: q.parameters, pgbench: q.sql.replace(/(?<!:):(?!:)/g, "' || chr(58) || '").replace(/\$(\d+)/g, (_, n) => {
    const v = q.parameters[Number(n) - 1]
    if (!vars.has(v)) throw new Error(`no pgbench variable for parameter ${n} (${v})`)
    return vars.get(v)
  }).replace(/\s*\n\s*/g, ' ') + ';' }
}
// What the service runs for each first page: the attribute filter's page alone (every match fits
// in it, so no count follows: listFirstSources), bbox's page and count in one statement.
// (The bbox box's first corner is the parameter :h, reused as the x of the window.)
const pageStatement = statement(listing.listPageQuery, attributeInput)
function pgbench (script, clients) {
  const scriptFile = join(pgDir, `s${Math.random().toString(36).slice(2)}.sql`)
  writeFileSync(scriptFile, script)
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(2, clients)), '-T', String(DURATION), '-D', 'org=bench', '-D', 'lim=100', '-D', `cap=${CAP}`, '-f', scriptFile, url], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`pgbench: ${r.stderr}`)
  return Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1])
}
const attributeScript = `\\set hi random(0, 19990)\n\\set h :hi / 10.0\n\\set h2 :h + 0.05\n${pageStatement.pgbench}\n`
const bboxScript = `\\set xi random(0, 29900)\n\\set yi random(0, ${Math.max(1, Math.round((yRows * 0.01 - 0.08) * 1000))})\n\\set h -15 + :xi / 1000.0\n\\set y -15 + :yi / 1000.0\n\\set x2 :h + 0.07\n\\set y2 :y + 0.07\n${statement(listing.countedPageQuery, bboxInput).pgbench}\n`
log('attribute filter')
wrk(attributePaths.slice(0, 50)); wrk(bboxPaths.slice(0, 50))
const svc = []; const alt = []; const pgMany = []; const pgFew = []; const pgBbox = []
for (let i = 0; PARTS.includes('filter') && i < RUNS; i++) {
  if (i % 2 === 1) alt.push(wrk(bboxPaths))
  svc.push(wrk(attributePaths))
  if (i % 2 === 0) alt.push(wrk(bboxPaths))
  pgMany.push(pgbench(attributeScript, CONNECTIONS)); pgFew.push(pgbench(attributeScript, CORES))
  pgBbox.push(Math.max(pgbench(bboxScript, CONNECTIONS), pgbench(bboxScript, CORES)))
  log(`round ${i + 1}: attribute ${Math.round(svc[i])}, bbox ${Math.round(alt[i])}, pgbench ${Math.round(pgMany[i])} / ${Math.round(pgFew[i])}, pgbench of bbox's statement ${Math.round(pgBbox[i])}`)
}
const pg = pgMany.map((m, i) => Math.max(m, pgFew[i]))
if (svc.length > 0) {
  out.push('| items, limit=100, first pages | service req/s | bbox of as many features | × bbox (target ≥ 0.9×) | pgbench tps, 16 / 2 clients | × pgbench at its best (target ≥ 0.6×) | the same two in pgbench: attribute × bbox |', '|---|---|---|---|---|---|---|',
    `| \`hectares BETWEEN h AND h + 0.05\` (declared, indexed) | ${Math.round(median(svc)).toLocaleString('en')} | ${Math.round(median(alt)).toLocaleString('en')} | **${range(svc.map((v, i) => v / alt[i]))}** | ${Math.round(median(pgMany)).toLocaleString('en')} / ${Math.round(median(pgFew)).toLocaleString('en')} | **${range(svc.map((v, i) => v / pg[i]))}** | ${range(pg.map((v, i) => v / pgBbox[i]))} (bbox ${Math.round(median(pgBbox)).toLocaleString('en')} tps) |`, '')
}
const plan = (await db.query(`EXPLAIN (ANALYZE, COSTS OFF) ${pageStatement.text}`, pageStatement.parameters)).rows.map((r) => r['QUERY PLAN'])
out.push('The attribute filter\'s page statement (EXPLAIN ANALYZE, the bench\'s parameters):', '', '```', ...plan.filter((l) => /Index|Bitmap|Scan|Sort|Limit|Execution/.test(l)).slice(0, 14), '```', '')

// 3. Bytes.
if (!PARTS.includes('writes')) { process.stdout.write(out.join('\n') + '\n'); process.exit(0) }
const size = async (q) => Number((await db.query(q)).rows[0].n)
const n = await size('SELECT count(*) AS n FROM sources')
const column = await size('SELECT avg(pg_column_size(attributes)) AS n FROM sources')
const gin = await size("SELECT pg_relation_size('sources_attributes_gin') AS n")
const expressions = await size("SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) AS n FROM pg_index JOIN pg_class c ON c.oid = indexrelid WHERE c.relname LIKE 'sources_attribute\\_%'")
const table = await size("SELECT pg_total_relation_size('sources') AS n")
// One source's attributes changed 200 times (the history trigger writes each version).
const versionsBefore = await size("SELECT pg_total_relation_size('source_versions') AS n")
for (let i = 0; i < 200; i++) await db.query(`UPDATE sources SET attributes = attributes || jsonb_build_object('land_use', 'v' || $1::int) WHERE id = 'src_0000000000000000000001'`, [i])
const versionsAfter = await size("SELECT pg_total_relation_size('source_versions') AS n")
out.push(`- Bytes per source: the ten attributes ${column.toFixed(0)} (the jsonb column, average), their GIN index ${(gin / n).toFixed(0)}, the four declared attributes' expression indexes ${(expressions / n).toFixed(0)} together; the whole table with all indexes ${(table / n).toFixed(0)} a source.`,
  `- A version written when only the attributes change: ${((versionsAfter - versionsBefore) / 200).toFixed(0)} bytes (200 updates of one source; the polygon is stored again in each version).`)

process.stdout.write(out.join('\n') + '\n')
process.exit(0)
