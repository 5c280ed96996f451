// Where a GET or POST ratio against its baseline comes from: the same service with
// its fast layer on and off (DB_FAST_PATH), optionally an earlier build (BENCH_BEFORE_DIR: a
// checkout with its own built dist/), and the naive handler, each driven by autocannon over
// random ids of GET_ROWS, autocannon over one id, and a fetch() client over random ids; in
// BENCH_RUNS interleaved rounds, so drift hits every target alike; and 1,000-feature POSTs
// (64 per run, timed to the last answer) against pgbench's insert of the same polygons.
// Prints a Markdown table.
// Usage: npm run build && node bench/get-variants.mjs
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { JWT_SECRET, PASSWORD, SERVICE_FLAGS, benchDatabase, freePort, tempDir } from './setup.mjs'
import { multiPolygonEwkb } from '../dist/db/ewkb.js'
import { pgbenchPlacement, polygon } from './bodies.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const BEFORE = process.env.BENCH_BEFORE_DIR
const GET_ROWS = 10_000
const CONNECTIONS = 16
const log = (m) => process.stderr.write(`[variants] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const { url, env, db, accountId, seed } = await benchDatabase(log)
await seed(1, GET_ROWS)
await db.query('VACUUM (ANALYZE) sources')

const startArgs = SERVICE_FLAGS
async function start (name, args, extraEnv, cwd = process.cwd()) {
  const port = await freePort()
  const child = spawn(process.execPath, args, { cwd, env: { ...env, ...extraEnv, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] })
  process.on('exit', () => child.kill())
  for (let i = 0; i < 1200; i++) {
    try { const r = await fetch(`http://127.0.0.1:${port}/${extraEnv.READY_PATH ?? 'ready'}`); if (r.status < 500) break } catch {}
    await sleep(100)
  }
  let token
  if (name !== 'naive') {
    token = (await (await fetch(`http://127.0.0.1:${port}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
  }
  return { name, port, token }
}
const serviceEnv = { NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', LOGIN_MAX_FAILURES: '1000000000' }
const targets = [
  await start('service, fast path', [...startArgs, 'dist/main.cjs'], { ...serviceEnv, DB_FAST_PATH: 'true' }),
  await start('service, plain path', [...startArgs, 'dist/main.cjs'], { ...serviceEnv, DB_FAST_PATH: 'false' }),
  ...(BEFORE ? [await start('service before (BENCH_BEFORE_DIR)', [...startArgs, join(BEFORE, 'dist/main.cjs')], serviceEnv, BEFORE)] : []),
  await start('naive', ['bench/naive-server.mjs'], { ORG: 'bench', ACCOUNT_ID: accountId, READY_PATH: 'sources?id=x' })
]

const variants = [
  ['GET, autocannon, random ids of 10,000', { kind: 'get', getRows: GET_ROWS }],
  ['GET, autocannon, one id', { kind: 'get', getRows: 1 }],
  ['GET, fetch(), random ids of 10,000', { kind: 'get', getRows: GET_ROWS, client: 'fetch' }],
  ['POST 1 feature, autocannon', { kind: 'post', features: 1, vertices: 5 }],
  ['POST 1 feature, fetch()', { kind: 'post', features: 1, vertices: 5, client: 'fetch' }],
  ['POST 1,000 features (polygons/s)', { kind: 'post', features: 1000, vertices: 5, amount: 4 * CONNECTIONS }]
]
const bulk = (scenario) => scenario.features === 1000
const results = new Map()
let tag = 0
function run (target, scenario, duration) {
  const s = { url: `http://127.0.0.1:${target.port}`, connections: CONNECTIONS, duration, token: target.token, runTag: `v${Date.now().toString(36)}-${tag++}`, ...scenario }
  return JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
}
for (const target of targets) for (const [, scenario] of variants) run(target, bulk(scenario) ? { ...scenario, amount: CONNECTIONS } : scenario, 2)
for (let round = 0; round < RUNS; round++) {
  for (const [name, scenario] of variants) {
    for (const target of targets) {
      log(`round ${round + 1}: ${target.name}: ${name}`)
      const r = run(target, scenario, DURATION)
      if (bulk(scenario)) r.rps *= 1000
      const key = `${name}|${target.name}`
      results.set(key, [...(results.get(key) ?? []), r])
    }
  }
}

// pgbench: the service's own 1,000-row INSERT of the same polygons, 4 per client, each moved to
// a block at random as the generator moves each request's (bodies.mjs placement).
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
const hex = multiPolygonEwkb(Array.from({ length: 1000 }, (_, i) => polygon(5, i))).toString('hex')
const script = join(tempDir('variants-'), 'insert.sql')
const place = pgbenchPlacement(1000)
writeFileSync(script, `\\set n random(1, 1000000000000)
${place.set}
INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) SELECT t.id, t.feature_id, 'bench', '${accountId}'::uuid, t.geom, tstzrange(t.start_at, t.end_at, '[)') FROM ROWS FROM (unnest(ARRAY(SELECT 'src_q' || lpad(CAST(CAST(:n AS bigint) * 1000 + g AS text), 21, '0') FROM generate_series(1, 1000) AS g)), unnest(ARRAY(SELECT 'pgq-' || CAST(:n AS text) || '-' || g FROM generate_series(1, 1000) AS g)), ST_Dump(ST_Translate('\\x${hex}'::bytea::geometry, ${place.dx}, ${place.dy})), unnest(array_fill('2024-01-01T00:00:00Z'::timestamptz, ARRAY[1000])), unnest(array_fill('2024-02-01T00:00:00Z'::timestamptz, ARRAY[1000]))) WITH ORDINALITY AS t(id, feature_id, path, geom, start_at, end_at, ord);
`)
const pgbenchRates = []
for (let round = 0; round < RUNS; round++) {
  const r = spawnSync(pgbenchBin, ['-n', '-M', 'prepared', '-c', String(CONNECTIONS), '-j', '2', '-t', '4', '-f', script, url], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`pgbench: ${r.stderr}`)
  pgbenchRates.push(Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1]) * 1000)
}

const lines = [
  `GET and single-POST variants, ${RUNS} interleaved rounds of ${DURATION} s, ${CONNECTIONS} connections, ${GET_ROWS.toLocaleString('en')} seeded rows; req/s median (min–max), ratio to the naive handler, the generator's CPU per request`,
  '',
  `| variant | ${targets.map((t) => t.name).join(' | ')} | ${targets.filter((t) => t.name !== 'naive').map((t) => `${t.name} × naive`).join(' | ')} |`,
  `|---|${targets.map(() => '---').join('|')}|${targets.filter((t) => t.name !== 'naive').map(() => '---').join('|')}|`
]
for (const [name] of variants) {
  const med = (t) => median(results.get(`${name}|${t.name}`).map((r) => r.rps))
  const cell = (t) => {
    const rs = results.get(`${name}|${t.name}`)
    const cpuPerReq = median(rs.map((r) => r.generatorCpuMs * 1000 / Math.max(1, r.total)))
    const errors = rs.reduce((a, r) => a + r.errors + r.non2xx, 0)
    return `${Math.round(med(t)).toLocaleString('en')} (${Math.round(Math.min(...rs.map((r) => r.rps)))}–${Math.round(Math.max(...rs.map((r) => r.rps)))}), gen ${cpuPerReq.toFixed(0)} µs/req${errors ? `, ${errors} errors` : ''}`
  }
  const naive = targets.find((t) => t.name === 'naive')
  lines.push(`| ${name} | ${targets.map(cell).join(' | ')} | ${targets.filter((t) => t.name !== 'naive').map((t) => `${(med(t) / med(naive)).toFixed(2)}×`).join(' | ')} |`)
}
const pgbenchMedian = median(pgbenchRates)
lines.push('', `pgbench, the same 1,000-row INSERT, 16 clients × 4: ${Math.round(pgbenchMedian).toLocaleString('en')} polygons/s (${pgbenchRates.map((r) => Math.round(r)).join(', ')}); ` +
  targets.filter((t) => t.name !== 'naive').map((t) => `${t.name} ${(median(results.get(`POST 1,000 features (polygons/s)|${t.name}`).map((r) => r.rps)) / pgbenchMedian).toFixed(2)}× pgbench`).join(', '))
process.stdout.write(`${lines.join('\n')}\n`)
await db.end()
process.exit(0)
