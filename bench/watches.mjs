// Watched areas (issue 47, point 5): what 10,000 registered watches cost a write. A single-feature
// POST /sources (each at a fresh random place north of the seeded grid, bench/bodies.mjs) is run
// against the service with no watch registered and with BENCH_WATCHES (10,000) watches of 0.5° ×
// 0.5° (about 1,500–3,000 km² each, under the default WATCH_MAX_AREA_KM2) scattered at random
// over the same region, a period covering the posted ones and no filter: about one POST in eight
// lands in a watch and writes a watch.matched event (the count is printed). Rounds of each
// interleaved, BENCH_RUNS of BENCH_DURATION s, medians; the sources posted by a round are deleted
// before the next. Target: with watches ≥ 0.9 × without. Prints Markdown.
// Usage: npm run build && node bench/watches.mjs
import { execFileSync, spawn } from 'node:child_process'
import { cpus, loadavg } from 'node:os'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort } from './setup.mjs'

const WATCHES = Number(process.env.BENCH_WATCHES ?? 10_000)
const SEEDED = Number(process.env.BENCH_WATCH_SOURCES ?? 100_000)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8)
const log = (m) => process.stderr.write(`[watches] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const load1 = () => loadavg().map((l) => l.toFixed(2)).join(' ')

const loadBefore = load1()
const { env, db, seed, accountId } = await benchDatabase(log)
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE id LIKE 'src_0%'`)).rows[0].n) < SEEDED) await seed(1, SEEDED)

const port = await freePort()
const child = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', PORT: String(port) },
  stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => child.kill())
const service = `http://127.0.0.1:${port}`
for (let i = 0; i < 200; i++) { try { if ((await fetch(`${service}/ready`)).status < 500) break } catch {} await sleep(100) }
const token = (await (await fetch(`${service}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token

async function setWatches (n) {
  await db.query('TRUNCATE watches')
  if (n > 0) {
    await db.query(`INSERT INTO watches (organisation, created_by, geom, period)
      SELECT 'watchers', $1::uuid, ST_MakeEnvelope(x, y, x + 0.5, y + 0.5, 4326), '[2023-01-01Z,2026-01-01Z)'
      FROM (SELECT -177 + random() * 353.5 AS x, 20 + random() * 59.5 AS y FROM generate_series(1, $2::integer)) AS g`, [accountId, n])
  }
  await db.query('ANALYZE watches')
}
const cleanUp = async () => { await db.query(`DELETE FROM sources WHERE feature_id LIKE 'post-%'`) }

let tag = 0
function run () {
  const s = { url: service, kind: 'post', features: 1, connections: CONNECTIONS, duration: DURATION, token, runTag: `post-${process.pid}-${tag++}` }
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  if (r.errors > 0 || Object.keys(r.statusCodes).some((c) => c >= 300)) throw new Error(`failed requests: ${JSON.stringify(r.statusCodes)}`)
  return r
}

const rounds = { none: [], watched: [] }
let posted = 0
let matched = 0
// A warm-up round, not counted.
await setWatches(0); run(); await cleanUp()
for (let i = 0; i < RUNS; i++) {
  for (const kind of i % 2 === 0 ? ['none', 'watched'] : ['watched', 'none']) {
    await setWatches(kind === 'none' ? 0 : WATCHES)
    const before = Number((await db.query(`SELECT count(*) AS n FROM events WHERE type = 'watch.matched'`)).rows[0].n)
    const r = run()
    rounds[kind].push(r)
    log(`${kind}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`)
    if (kind === 'watched') {
      posted += Number((await db.query(`SELECT count(*) AS n FROM sources WHERE feature_id LIKE 'post-%'`)).rows[0].n)
      matched += Number((await db.query(`SELECT count(*) AS n FROM events WHERE type = 'watch.matched'`)).rows[0].n) - before
    }
    await cleanUp()
  }
}
const rps = (k) => median(rounds[k].map((r) => r.rps))
const p50 = (k) => median(rounds[k].map((r) => r.p50))
const out = [
  `Machine: ${cpus().length} cores, load average ${loadBefore} before the run and ${load1()} after it (1, 5, 15 min); ${SEEDED.toLocaleString('en')} seeded sources; ${CONNECTIONS} connections, ${RUNS} interleaved rounds of ${DURATION} s each, medians.`,
  '',
  '| single-feature POST /sources | req/s | p50 ms |',
  '|---|---|---|',
  `| no watch | ${Math.round(rps('none'))} | ${p50('none')} |`,
  `| ${WATCHES.toLocaleString('en')} watches | ${Math.round(rps('watched'))} | ${p50('watched')} |`,
  '',
  `Ratio (with / without): **${(rps('watched') / rps('none')).toFixed(2)}×** (target ≥ 0.9×). With watches, ${matched.toLocaleString('en')} of ${posted.toLocaleString('en')} posted sources (${(100 * matched / Math.max(1, posted)).toFixed(1)} %) matched a watch and wrote a watch.matched event.`
]
console.log(out.join('\n'))
await db.end()
process.exit(0)
