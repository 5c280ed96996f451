// Where a GET or single-POST ratio against the naive handler comes from: the same service with
// its fast layer on and off (DB_FAST_PATH), optionally an earlier build (BENCH_BEFORE_DIR: a
// checkout with its own built dist/), and the naive handler, each driven by autocannon over
// random ids of GET_ROWS, autocannon over one id, and a fetch() client over random ids; in
// BENCH_RUNS interleaved rounds, so drift hits every target alike. Prints a Markdown table.
// Usage: npm run build && node bench/get-variants.mjs
import { execFileSync, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import { startPostgis } from '../scripts/postgis.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const BEFORE = process.env.BENCH_BEFORE_DIR
const GET_ROWS = 10_000
const CONNECTIONS = 16
const PASSWORD = 'bench password 1234'
const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-48bytes!!'
const log = (m) => process.stderr.write(`[variants] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const freePort = () => new Promise((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) }) })

const cluster = await startPostgis({ log })
process.on('exit', () => cluster.stop())
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
const url = cluster.url.replace(/\/postgres$/, '/bench')
const admin = new pg.Client({ connectionString: cluster.url }); await admin.connect()
await admin.query('CREATE DATABASE bench'); await admin.end()
const env = { ...process.env, DATABASE_URL: url }
delete env.DATA_DIR
execFileSync(process.execPath, ['dist/cli.js', 'migrate'], { env, stdio: 'inherit' })
execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'bench@example.org', '--org', 'bench', '--role', 'editor', '--password-stdin'], { env, input: PASSWORD, stdio: ['pipe', 'inherit', 'inherit'] })
const db = new pg.Client({ connectionString: url }); await db.connect()
const accountId = (await db.query(`SELECT id FROM accounts WHERE email = 'bench@example.org'`)).rows[0].id
await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT 'src_' || lpad(n::text, 22, '0'), 'seed-' || n, 'bench', $1::uuid,
    ST_MakeEnvelope((n % 3000) * 0.01 - 15, (n / 3000 % 3000) * 0.01 - 15, (n % 3000) * 0.01 - 14.995, (n / 3000 % 3000) * 0.01 - 14.995, 4326),
    '[2024-01-01Z,2024-02-01Z)'
  FROM generate_series(1, ${GET_ROWS}) AS n`, [accountId])
await db.query('VACUUM (ANALYZE) sources')

const startArgs = ['--max-semi-space-size=2', '--optimize-for-size']
async function start (name, args, extraEnv, cwd = process.cwd()) {
  const port = await freePort()
  const child = spawn(process.execPath, args, { cwd, env: { ...env, ...extraEnv, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] })
  process.on('exit', () => child.kill())
  for (let i = 0; i < 200; i++) {
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
  ['POST 1 feature, fetch()', { kind: 'post', features: 1, vertices: 5, client: 'fetch' }]
]
const results = new Map()
let tag = 0
function run (target, scenario, duration) {
  const s = { url: `http://127.0.0.1:${target.port}`, connections: CONNECTIONS, duration, token: target.token, runTag: `v${Date.now().toString(36)}-${tag++}`, ...scenario }
  return JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
}
for (const target of targets) for (const [, scenario] of variants) run(target, scenario, 2)
for (let round = 0; round < RUNS; round++) {
  for (const [name, scenario] of variants) {
    for (const target of targets) {
      log(`round ${round + 1}: ${target.name}: ${name}`)
      const r = run(target, scenario, DURATION)
      const key = `${name}|${target.name}`
      results.set(key, [...(results.get(key) ?? []), r])
    }
  }
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
process.stdout.write(`${lines.join('\n')}\n`)
await db.end()
process.exit(0)
