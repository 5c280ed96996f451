// What the PgBouncer choice costs (docs/operations.md, "PgBouncer"): the service
// straight to PostgreSQL with named prepared statements (DB_POOL_MODE=session, the default),
// straight to PostgreSQL with unnamed statements (DB_POOL_MODE=transaction), and through
// PgBouncer 1.18 in transaction mode (DB_POOL_MODE=transaction), on GET /sources/?id= over random
// ids of 10,000 and POST /sources of one feature; BENCH_RUNS interleaved rounds of
// BENCH_DURATION s, 16 connections. Prints a Markdown table.
// Usage: npm run build && node bench/pgbouncer.mjs
import { execFileSync, spawn } from 'node:child_process'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort } from './setup.mjs'
import { startPgBouncer } from '../scripts/pgbouncer.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const CONNECTIONS = 16
const log = (m) => process.stderr.write(`[pgbouncer] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, env, db, seed } = await benchDatabase(log)
await seed(1, 10_000)
await db.query('VACUUM (ANALYZE) sources')
const bouncer = await startPgBouncer(url)
process.on('exit', () => bouncer.stop())

async function start (name, extraEnv) {
  const port = await freePort()
  const child = spawn(process.execPath, SERVICE_ARGS, {
    env: { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', PORT: String(port), ...extraEnv }, stdio: ['ignore', 'ignore', 'inherit']
  })
  process.on('exit', () => child.kill())
  for (let i = 0; i < 200; i++) { try { if ((await fetch(`http://127.0.0.1:${port}/ready`)).ok) break } catch {} await sleep(100) }
  const token = (await (await fetch(`http://127.0.0.1:${port}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
  return { name, port, token }
}
const targets = [
  await start('direct, named prepared statements (session)', { DB_POOL_MODE: 'session' }),
  await start('direct, unnamed statements (transaction)', { DB_POOL_MODE: 'transaction' }),
  await start('PgBouncer 1.18 transaction mode (transaction)', { DB_POOL_MODE: 'transaction', DATABASE_URL: bouncer.pooled(url) })
]
const scenarios = [
  ['GET /sources/?id=, random ids of 10,000', { kind: 'get', getRows: 10_000 }],
  ['POST /sources, 1 feature', { kind: 'post', features: 1, vertices: 5 }]
]
const results = new Map()
let tag = 0
const run = (target, scenario, duration) => JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify({ url: `http://127.0.0.1:${target.port}`, connections: CONNECTIONS, duration, token: target.token, runTag: `b${Date.now().toString(36)}-${tag++}`, ...scenario })], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
for (const target of targets) for (const [, scenario] of scenarios) run(target, scenario, 2)
for (let round = 0; round < RUNS; round++) {
  for (const [name, scenario] of scenarios) {
    for (const target of targets) {
      const r = run(target, scenario, DURATION)
      log(`round ${round + 1}: ${target.name}: ${name}: ${Math.round(r.rps)} req/s, errors ${r.errors + r.non2xx}`)
      results.set(`${name}|${target.name}`, [...(results.get(`${name}|${target.name}`) ?? []), r])
    }
  }
}
const lines = [
  `${RUNS} interleaved rounds of ${DURATION} s, ${CONNECTIONS} connections; req/s median (min–max), and the ratio to the direct connection with prepared statements`,
  '',
  `| scenario | ${targets.map((t) => t.name).join(' | ')} |`,
  `|---|${targets.map(() => '---').join('|')}|`
]
for (const [name] of scenarios) {
  const rates = (t) => results.get(`${name}|${t.name}`).map((r) => r.rps)
  const base = median(rates(targets[0]))
  const errors = (t) => results.get(`${name}|${t.name}`).reduce((a, r) => a + r.errors + r.non2xx, 0)
  lines.push(`| ${name} | ${targets.map((t) => `${Math.round(median(rates(t))).toLocaleString('en')} (${Math.round(Math.min(...rates(t)))}–${Math.round(Math.max(...rates(t)))}), ${(median(rates(t)) / base).toFixed(2)}×${errors(t) ? `, ${errors(t)} errors` : ''}`).join(' | ')} |`)
}
process.stdout.write(`${lines.join('\n')}\n`)
await db.end()
process.exit(0)
