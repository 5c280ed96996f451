// Event retention and growth (issue 49). One service as `npm start` runs it, on a throwaway PostGIS.
//   1. A write's cost while the retention removes events vs idle: POST /sources with 1 feature,
//      16 at once, BENCH_RUNS interleaved rounds of BENCH_DURATION s, idle and with retention
//      batches (events_remove_expired, 1,000 events each, the service's default) running back to
//      back on their own connection the whole round, over BENCH_EVENTS expired events seeded in
//      SQL: req/s, the with/idle ratio (median of the rounds'), and the batches' time and rate.
//   2. Versions: the bytes each version adds to source_versions (table, TOAST and indexes), for
//      one source updated BENCH_EDITS times, with a 5-point and a 1,000-point polygon.
// Usage: npm run build && node bench/retention.mjs   (prints Markdown to stdout)
import { spawn } from 'node:child_process'
import pg from 'pg'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort } from './setup.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000)
const EDITS = Number(process.env.BENCH_EDITS ?? 1000)
const BATCH = 1000
const log = (m) => process.stderr.write(`[retention] ${m}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))] }

const { url, env, db } = await benchDatabase(log)
const port = await freePort()
const base = `http://127.0.0.1:${port}`
// The service's own retention job never runs here (a check an hour): the bench drives the batches.
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', PORT: String(port), JWT_SECRET, RATE_LIMIT_MAX: '1000000000', EVENTS_LISTEN_URL: url, EVENTS_RETENTION_CHECK_MS: '3600000' },
  stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => service.kill())
for (let i = 0; i < 1200; i++) {
  try { if ((await fetch(`${base}/ready`)).status === 200) break } catch {}
  await sleep(100)
}
const json = async (res) => { if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`); return res.json() }
const { token } = await json(await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) }))
const auth = { authorization: `Bearer ${token}` }

let n = 0
const feature = () => {
  n++
  const x = -170 + (n % 3000) * 0.1
  const y = -80 + Math.floor(n / 3000) * 0.1
  return { type: 'Feature', id: `r-${n}`, properties: { start_at: '2024-01-01', end_at: '2024-02-01' }, geometry: { type: 'Polygon', coordinates: [[[x, y], [x + 0.01, y], [x + 0.01, y + 0.01], [x, y + 0.01], [x, y]]] } }
}
const post = async () => {
  const res = await fetch(`${base}/sources`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'FeatureCollection', features: [feature()] }) })
  if (res.status !== 201) throw new Error(`POST ${res.status} ${await res.text()}`)
  await res.arrayBuffer()
}
async function rate (seconds) {
  const end = Date.now() + seconds * 1000
  let done = 0
  const t0 = Date.now()
  await Promise.all(Array.from({ length: 16 }, async () => { while (Date.now() < end) { await post(); done++ } }))
  return done / ((Date.now() - t0) / 1000)
}

log(`seeding ${EVENTS} expired events`)
for (let from = 0; from < EVENTS; from += 50_000) {
  await db.query(`INSERT INTO events (type, subject, organisation, time, data)
    SELECT 'source.updated', 'src_' || lpad(g::text, 22, '0'), 'bench', now() - interval '40 days',
      jsonb_build_object('id', 'src_' || lpad(g::text, 22, '0'), 'feature_id', 'seed-' || g, 'start_at', '2024-01-01T00:00:00Z', 'end_at', '2024-02-01T00:00:00Z', 'version', 2)
    FROM generate_series($1::bigint, $2::bigint) AS g`, [from, Math.min(from + 50_000, EVENTS) - 1])
}
await db.query('VACUUM ANALYZE events')

const remover = new pg.Client({ connectionString: url }); await remover.connect()
const batchMs = []
let removed = 0
/** Retention batches back to back until `stop()`; what they removed. */
function retentionRunning () {
  let stopped = false
  const done = (async () => {
    while (!stopped) {
      const t0 = performance.now()
      const { rows } = await remover.query(`SELECT events_remove_expired(interval '30 days', ${BATCH}) AS n`)
      batchMs.push(performance.now() - t0)
      removed += rows[0].n ?? 0
      if (rows[0].n === 0) throw new Error('ran out of expired events: raise BENCH_EVENTS')
    }
  })()
  return async () => { stopped = true; await done }
}

log('1. writes idle and while the retention removes')
await rate(1)
const idle = []; const busy = []; const ratios = []
let busyMs = 0
for (let r = 0; r < RUNS; r++) {
  const a = await rate(DURATION)
  const removedBefore = removed
  const t0 = Date.now()
  const stop = retentionRunning()
  const b = await rate(DURATION)
  await stop()
  busyMs += Date.now() - t0
  idle.push(a); busy.push(b); ratios.push(b / a)
  log(`round ${r + 1}: idle ${a.toFixed(1)}, with retention ${b.toFixed(1)} req/s; ${removed - removedBefore} events removed`)
}
console.log('### A write while the retention removes events (median of rounds)\n')
console.log(`POST /sources, 1 feature, 16 at once; ${RUNS} interleaved rounds of ${DURATION} s; ${EVENTS.toLocaleString('en')} expired events seeded; batches of ${BATCH} back to back on their own connection for the whole of each "with" round.\n`)
console.log('| idle req/s | with retention req/s | with/idle | batches | batch p50 / p99 ms | events removed/s |\n|---|---|---|---|---|---|')
console.log(`| ${median(idle).toFixed(1)} | ${median(busy).toFixed(1)} | ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) | ${batchMs.length} | ${pct(batchMs, 0.5).toFixed(1)} / ${pct(batchMs, 0.99).toFixed(1)} | ${Math.round(removed / (busyMs / 1000)).toLocaleString('en')} |`)

log('2. versions')
const size = async () => Number((await db.query(`SELECT pg_total_relation_size('source_versions') AS b`)).rows[0].b)
console.log(`\n### Versions: bytes per version (one source updated ${EDITS.toLocaleString('en')} times)\n`)
console.log('| polygon | bytes per version (table, TOAST, indexes) | row (pg_column_size) |\n|---|---|---|')
for (const [name, points] of [['5 points (a square)', 4], ['1,000 points', 999]]) {
  const ring = Array.from({ length: points }, (_, i) => [Math.cos(2 * Math.PI * i / points) * 0.01 + 20, Math.sin(2 * Math.PI * i / points) * 0.01 + 20])
  ring.push(ring[0])
  const res = await json(await fetch(`${base}/sources`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', id: `versions-${points}`, properties: { start_at: '2024-01-01', end_at: '2024-02-01' }, geometry: { type: 'Polygon', coordinates: [ring] } }] }) }))
  const id = res.id
  await db.query('VACUUM source_versions')
  const before = await size()
  for (let i = 0; i < EDITS; i++) {
    await db.query(`UPDATE sources SET period = tstzrange('2024-01-01'::timestamptz, '2024-02-01'::timestamptz + $2 * interval '1 minute') WHERE id = $1`, [id, i + 1])
  }
  const after = await size()
  const row = Number((await db.query('SELECT avg(pg_column_size(v.*)) AS b FROM source_versions AS v WHERE source_id = $1', [id])).rows[0].b)
  console.log(`| ${name} | ${Math.round((after - before) / EDITS)} | ${Math.round(row)} |`)
}
await remover.end()
await db.end()
process.exit(0)
