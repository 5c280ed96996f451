// What metrics and a read replica cost or bring, in one run on one machine (issue 38):
// - /metrics overhead: items (0.1° bbox, limit 100) and single POSTs, a service with metrics on
//   (METRICS_TOKEN: every request timed) against one with them off, alternated round by round;
// - items with one streaming replica (DATABASE_REPLICA_URLS) against the primary alone;
// - read-your-writes: clients that POST then GET their new source, with the primary's
//   synchronous_commit off (the test cluster's setting) and on, and the replica held 50 ms
//   behind (recovery_min_apply_delay); the wait of those reads from the service's own
//   histogram, and the GET latency the clients saw.
// A throwaway primary (scripts/postgis.mjs), BENCH_ROWS seeded sources, a pg_basebackup replica.
// Env: BENCH_DURATION (s, default 5), BENCH_RUNS (default 3), BENCH_ROWS (default 100000).
import { execFileSync, spawn } from 'node:child_process'
import { cpus } from 'node:os'
import pg from 'pg'
import { startPostgis, startReplica } from '../scripts/postgis.mjs'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, freePort } from './setup.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const ROWS = Number(process.env.BENCH_ROWS ?? 100_000)
const CONNECTIONS = 16
const log = (m) => process.stderr.write(`[bench] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const primary = await startPostgis({ log })
process.on('exit', () => primary.stop())
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
const url = primary.url.replace(/\/postgres$/, '/bench')
const admin = new pg.Client({ connectionString: primary.url }); await admin.connect()
await admin.query('CREATE DATABASE bench'); await admin.end()
const env = { PATH: process.env.PATH, DATABASE_URL: url }
execFileSync(process.execPath, ['dist/cli.js', 'migrate'], { env, stdio: 'inherit' })
execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'bench@example.org', '--org', 'bench', '--role', 'editor', '--password-stdin'], { env, input: PASSWORD, stdio: ['pipe', 'inherit', 'inherit'] })
const db = new pg.Client({ connectionString: url }); await db.connect()
const accountId = (await db.query(`SELECT id FROM accounts WHERE email = 'bench@example.org'`)).rows[0].id
// The grid of bench/setup.mjs: 0.005° boxes every 0.01° over [-15, 15)².
await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT 'src_' || lpad(n::text, 22, '0'), 'seed-' || n, 'bench', $2::uuid,
    ST_MakeEnvelope((n % 3000) * 0.01 - 15, (n / 3000 % 3000) * 0.01 - 15, (n % 3000) * 0.01 - 14.995, (n / 3000 % 3000) * 0.01 - 14.995, 4326),
    '[2024-01-01Z,2024-02-01Z)'
  FROM generate_series(1, $1::bigint) AS n`, [ROWS, accountId])
await db.query('VACUUM (ANALYZE) sources')
await db.query('CHECKPOINT')
log(`seeded ${ROWS} sources`)
const replica = await startReplica(primary, { log })
process.on('exit', () => replica.stop())
const replicaUrl = replica.url.replace(/\/postgres$/, '/bench')

const METRICS_TOKEN = 'bench-metrics-token-0123456789'
async function startService (extra) {
  const port = await freePort()
  const child = spawn(process.execPath, SERVICE_ARGS, {
    env: { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', PORT: String(port), ...extra },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  process.on('exit', () => child.kill())
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    try { if ((await fetch(`${base}/ready`)).status === 200) break } catch {}
    if (i > 200) throw new Error('the service did not start')
    await sleep(100)
  }
  return { base, port, child }
}
const services = {
  off: await startService({}),
  on: await startService({ METRICS_TOKEN }),
  replica: await startService({ METRICS_TOKEN, DATABASE_REPLICA_URLS: replicaUrl })
}
const token = (await (await fetch(`${services.off.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token

// Windows of 0.1° (about 100 sources each) at random places of the seeded grid.
const rows = Math.ceil(ROWS / 3000)
const windows = Array.from({ length: 200 }, () => {
  const x = -15 + Math.random() * 29.9
  const y = -15 + Math.random() * Math.max(0.01, rows * 0.01 - 0.1)
  return `${x.toFixed(3)},${y.toFixed(3)},${(x + 0.1).toFixed(3)},${(y + 0.1).toFixed(3)}`
})
const itemsPaths = windows.map((w) => `/collections/sources/items?limit=100&bbox=${w}`)
let tag = 0
function load (target, scenario, duration = DURATION) {
  const s = { url: services[target].base, connections: CONNECTIONS, duration, token, runTag: `ops-${target}-${tag++}-${Date.now()}`, ...scenario }
  return JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
}

/** Rounds of a against b, alternated (a warm-up of each first): req/s of each and the ratio per round. */
function rounds (name, a, b, scenario) {
  log(`${name}: ${a} against ${b}, ${RUNS} rounds of ${DURATION} s`)
  load(a, scenario, 2); load(b, scenario, 2)
  const out = { name, a, b, aRps: [], bRps: [], ratio: [] }
  for (let i = 0; i < RUNS; i++) {
    const ra = load(a, scenario).rps
    const rb = load(b, scenario).rps
    out.aRps.push(ra); out.bRps.push(rb); out.ratio.push(ra / rb)
  }
  return out
}

// BENCH_PARTS=ryw: the read-your-writes runs alone.
const results = process.env.BENCH_PARTS === 'ryw' ? [] : [
  rounds('items, 0.1° bbox, limit 100: metrics on / off', 'on', 'off', { kind: 'paths', paths: itemsPaths }),
  rounds('POST /sources (1 feature): metrics on / off', 'on', 'off', { kind: 'post', features: 1, vertices: 5 }),
  rounds('items, 0.1° bbox, limit 100: one replica / primary only', 'replica', 'on', { kind: 'paths', paths: itemsPaths })
]

/** Buckets of a histogram series in the Prometheus text → the bound under which a share q falls. */
function quantile (text, name, labels, q) {
  const buckets = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)",${labels}\\} (\\S+)$`, 'gm'))].map((m) => [Number(m[1] === '+Inf' ? Infinity : m[1]), Number(m[2])])
  const total = buckets.at(-1)?.[1] ?? 0
  return { count: total, bound: buckets.find(([, n]) => n >= q * total)?.[0] }
}
const scrape = async () => (await fetch(`${services.replica.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
const served = (text, by) => Number(new RegExp(`^source_registry_read_your_writes_wait_seconds_count\\{served_by="${by}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0)

/** CLIENTS loops of POST then GET of the new source on the replica service for `seconds`. */
async function readYourWrites (label, seconds, clients = 8) {
  const before = await scrape()
  const latencies = []
  let misses = 0
  let n = 0
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const until = performance.now() + seconds * 1000
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    while (performance.now() < until) {
      const i = n++
      const x = -170 + (i % 1000) * 0.01; const y = 40 + c + Math.floor(i / 1000) * 0.01
      const body = { type: 'FeatureCollection', features: [{ type: 'Feature', id: `ryw-${label}-${c}-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-02-01T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: [[[x, y], [x + 0.005, y], [x + 0.005, y + 0.005], [x, y + 0.005], [x, y]]] } }] }
      const posted = await fetch(`${services.replica.base}/sources`, { method: 'POST', headers, body: JSON.stringify(body) })
      const { id } = await posted.json()
      const t0 = performance.now()
      const got = await fetch(`${services.replica.base}/sources/?id=${id}`, { headers })
      await got.arrayBuffer()
      latencies.push(performance.now() - t0)
      if (got.status !== 200) misses++
    }
  }))
  const after = await scrape()
  latencies.sort((a, b) => a - b)
  const at = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]
  // The histogram is cumulative since the start: this run's share is after − before, bucket by bucket.
  const diff = after.split('\n').map((line) => {
    const m = /^(source_registry_read_your_writes_wait_seconds_bucket\{[^}]*\}) (\S+)$/.exec(line)
    if (m === null) return line
    const old = new RegExp(`^${m[1].replace(/[{}.+"]/g, '\\$&')} (\\S+)$`, 'm').exec(before)
    return `${m[1]} ${Number(m[2]) - Number(old?.[1] ?? 0)}`
  }).join('\n')
  const wait = (by) => quantile(diff, 'source_registry_read_your_writes_wait_seconds', `served_by="${by}"`, 0.99)
  return {
    label, reads: latencies.length, misses,
    getP50Ms: +at(0.5).toFixed(2), getP99Ms: +at(0.99).toFixed(2),
    waitedThenReplica: served(after, 'replica') - served(before, 'replica'),
    waitedThenPrimary: served(after, 'primary') - served(before, 'primary'),
    waitP99ReplicaS: wait('replica').bound, waitP99PrimaryS: wait('primary').bound
  }
}

// scripts/postgis.mjs runs the primary with synchronous_commit off, as a test cluster: a commit
// then returns before its WAL is written, and the WAL writer sends it on every 200 ms
// (wal_writer_delay), so a replica cannot see a write sooner. Then with it on, as in production.
const replicaAdmin = new pg.Client({ connectionString: replica.url }); await replicaAdmin.connect()
const primaryAdmin = new pg.Client({ connectionString: primary.url }); await primaryAdmin.connect()
const setting = async (client, name, value) => { await client.query(`ALTER SYSTEM SET ${name} = '${value}'`); await client.query('SELECT pg_reload_conf()'); await sleep(500) }
const ryw = [await readYourWrites('synchronous_commit off, replaying at once', 10)]
await setting(primaryAdmin, 'synchronous_commit', 'on')
ryw.push(await readYourWrites('synchronous_commit on, replaying at once', 10))
await setting(replicaAdmin, 'recovery_min_apply_delay', '50ms')
ryw.push(await readYourWrites('synchronous_commit on, replay held 50 ms behind (recovery_min_apply_delay)', 10))
await replicaAdmin.end()
await primaryAdmin.end()

const fmt = (xs) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`
const lines = [
  `bench/ops.mjs: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${ROWS} sources, ${RUNS} rounds of ${DURATION} s, ${CONNECTIONS} connections (autocannon)`,
  '',
  '| comparison | a req/s, median (min–max) | b req/s | a / b per round, median (min–max) |',
  '|---|---|---|---|',
  ...results.map((r) => `| ${r.name} | ${fmt(r.aRps)} | ${fmt(r.bRps)} | ${fmt(r.ratio)} |`),
  '',
  '| read your writes: 8 clients POST then GET, 10 s | reads | not 200 | GET p50 / p99 ms | waited then replica / primary | wait p99 ≤ (s), replica / primary |',
  '|---|---|---|---|---|---|',
  ...ryw.map((r) => `| ${r.label} | ${r.reads} | ${r.misses} | ${r.getP50Ms} / ${r.getP99Ms} | ${r.waitedThenReplica} / ${r.waitedThenPrimary} | ${r.waitP99ReplicaS ?? '–'} / ${r.waitP99PrimaryS ?? '–'} |`)
]
process.stdout.write(`${lines.join('\n')}\n`)
process.stdout.write(`${JSON.stringify({ results, ryw })}\n`)
// The services first, so that they do not log the databases going away.
for (const s of Object.values(services)) s.child.kill()
await sleep(200)
process.exit(0)
