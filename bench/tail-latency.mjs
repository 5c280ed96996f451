// Tail latency at half of peak (issue 50): GET by id, a POST of one feature and an items page
// (a 0.05° window, 10 features), for the service started with each of several sets of node
// flags (V8's young generation), on one database, in one run. For each request: the peak req/s
// of each variant (autocannon, 16 connections, closed loop), then an open-loop load at an even
// rate of half the lowest variant's peak (bench/load.mjs `paced`, up to 16 connections), p50 and
// p99 and the generator's own lateness; peak RSS (VmHWM) of each variant over all its loads. The
// variants take turns in every round (ABBA), so the machine's drift hits them alike.
// BENCH_VARIANTS: JSON { name: "flags" } (default: the flags of npm start against other
// young-generation sizes); BENCH_RUNS rounds (default 3) of BENCH_DURATION s (default 5);
// BENCH_DATABASE_URL reuses a `bench` database (seeded with at least 10,000 sources here);
// BENCH_ONLY runs only the requests whose name contains it.
// Usage: npm run build && node bench/tail-latency.mjs
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, SERVICE_FLAGS, benchDatabase, freePort, tempDir } from './setup.mjs'
import { insertFrom } from './pgbench-statements.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const GET_ROWS = 10_000
const CONNECTIONS = 16
const VARIANTS = JSON.parse(process.env.BENCH_VARIANTS ?? JSON.stringify({
  'npm start': SERVICE_FLAGS.join(' '),
  'semi-space 1 MB, heap growing 20 %': '--max-semi-space-size=1 --heap-growing-percent=20',
  'semi-space 8 MB, heap growing 20 %': '--max-semi-space-size=8 --heap-growing-percent=20',
  'semi-space 16 MB, heap growing 20 %': '--max-semi-space-size=16 --heap-growing-percent=20',
  'semi-space 16 MB': '--max-semi-space-size=16'
}))
const log = (m) => process.stderr.write(`[tail] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { url, env, db, seed, accountId } = await benchDatabase(log)
if (Number((await db.query(`SELECT count(*) AS n FROM sources WHERE organisation = 'bench'`)).rows[0].n) < GET_ROWS) await seed(1, GET_ROWS)
await db.query('VACUUM (ANALYZE) sources')

const main = SERVICE_ARGS.filter((a) => !a.startsWith('--'))
const services = []
for (const [name, flags] of Object.entries(VARIANTS)) {
  const port = await freePort()
  const child = spawn(process.execPath, [...flags.split(/\s+/).filter(Boolean), ...main], { env: { ...env, PORT: String(port), NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000' }, stdio: ['ignore', 'ignore', 'inherit'] })
  process.on('exit', () => child.kill())
  for (let i = 0; i < 300; i++) { try { if ((await fetch(`http://127.0.0.1:${port}/ready`)).ok) break } catch {} await sleep(100) }
  services.push({ name, flags, port, child })
}
// The generator's floor at the same paced rate: bench/floor-server.mjs answers at once.
const floorPort = await freePort()
const floor = spawn(process.execPath, ['bench/floor-server.mjs'], { env: { PORT: String(floorPort) }, stdio: 'ignore' })
process.on('exit', () => floor.kill())
await sleep(500)
const token = (await (await fetch(`http://127.0.0.1:${services[0].port}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
const hwm = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
for (const s of services) writeFileSync(`/proc/${s.child.pid}/clear_refs`, '5')

const runTag = Date.now().toString(36)
function load (service, scenario, duration) {
  const s = { url: `http://127.0.0.1:${service.port}`, connections: CONNECTIONS, duration, token, getRows: GET_ROWS, runTag: `${runTag}-${Math.random().toString(36).slice(2, 8)}`, ...scenario }
  return JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
}
// PostgreSQL alone, one POST at a time: pgbench runs the POST's statements (its INSERT, with
// every trigger, and the read of the new source's conflicts) from one client in a closed loop,
// so nothing queues. No load makes a POST faster than this, so its p99 bounds the service's from
// below. (Paced at the service's rate from 16 clients, pgbench's one-row transactions fall
// behind: the service batches concurrent POSTs into one statement, db/batcher.ts.)
const pgbenchBin = join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim(), 'pgbench')
// PostgreSQL paced: the same statements at the service's paced rate (pgbench -R), either a
// transaction a POST from CONNECTIONS clients (as a handler without batching would send them) or
// `batch` POSTs a statement from DB_WRITES_IN_FLIGHT's 2 clients at rate / batch (as the service's
// batcher sends them under load; db/batcher.ts). Under -R pgbench's logged time already counts
// from the transaction's scheduled start (its schedule lag included), as the service's paced
// latencies count from the request's due time (bench/load.mjs); a batched POST also waits for its
// batch to form, which this leaves out.
function pgbenchAlone (script, duration, { rate, batch = 1 } = {}) {
  const dir = tempDir('bench-tail-pgbench-')
  writeFileSync(join(dir, 'script.sql'), script)
  const clients = rate === undefined ? ['-c', '1'] : ['-c', String(batch === 1 ? CONNECTIONS : 2), '-j', '2', '-R', String(rate / batch)]
  execFileSync(pgbenchBin, ['-n', '-M', 'prepared', ...clients, '-T', String(duration), '-l', '--log-prefix', join(dir, 'pb'), '-f', join(dir, 'script.sql'), url], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  const ms = []
  for (const f of readdirSync(dir).filter((n) => n.startsWith('pb'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const c = line.split(' ')
      if (c.length >= 6) ms.push(Number(c[2]) / 1000)
    }
  }
  ms.sort((a, b) => a - b)
  return { p50: ms[Math.floor(ms.length * 0.5)], p99: ms[Math.floor(ms.length * 0.99)], n: ms.length, tps: ms.length * batch / duration }
}
const PGBENCH_SCRIPTS = { post: (batch) => insertFrom(batch, `t${batch}`, accountId) }

const windowPath = () => {
  const x = -14.9 + Math.floor(Math.random() * 20) * 0.1
  const y = -14.9 + Math.floor(Math.random() * 5) * 0.1
  return `/collections/sources/items?bbox=${x.toFixed(2)},${y.toFixed(2)},${(x + 0.05).toFixed(2)},${(y + 0.05).toFixed(2)}&limit=10`
}
const itemPaths = Array.from({ length: 100 }, windowPath)
const scenarios = [
  ['GET /sources/?id=', { kind: 'get' }],
  ['POST /sources (1 feature)', { kind: 'post', features: 1, vertices: 5 }],
  ['GET items, 0.05° window, limit 10', { kind: 'paths', paths: itemPaths }]
]
const rows = []
const load1 = loadavg()[0]
// BENCH_ONLY: run only the requests whose name contains it (e.g. POST).
for (const [name, scenario] of scenarios.filter(([n]) => n.includes(process.env.BENCH_ONLY ?? ''))) {
  const peak = new Map(services.map((s) => [s.name, []]))
  for (const s of services) load(s, scenario, 2)
  for (let i = 0; i < RUNS; i++) {
    for (const s of i % 2 === 0 ? services : [...services].reverse()) {
      const r = load(s, scenario, DURATION)
      peak.get(s.name).push(r.rps)
      log(`${name} ${s.name}: peak ${r.rps.toFixed(0)} req/s, errors ${r.errors + r.non2xx}`)
    }
  }
  const rate = Math.round(Math.min(...services.map((s) => median(peak.get(s.name)))) / 2)
  const paced = new Map(services.map((s) => [s.name, []]))
  for (let i = 0; i < RUNS; i++) {
    for (const s of i % 2 === 0 ? services : [...services].reverse()) {
      const r = load(s, { ...scenario, rate, paced: true }, DURATION)
      paced.get(s.name).push(r)
      log(`${name} ${s.name} at ${rate}/s: p50 ${r.p50} p99 ${r.p99} late p99 ${r.lateP99} errors ${r.errors + r.non2xx}`)
    }
  }
  const floors = []
  for (let i = 0; i < RUNS; i++) floors.push(load({ port: floorPort }, { ...scenario, rate, paced: true }, DURATION))
  const script = PGBENCH_SCRIPTS[scenario.kind]
  if (script !== undefined) {
    const cell = (rs) => `${median(rs.map((r) => r.p50)).toFixed(1)} | ${median(rs.map((r) => r.p99)).toFixed(1)} (${Math.min(...rs.map((r) => r.p99)).toFixed(1)}–${Math.max(...rs.map((r) => r.p99)).toFixed(1)})`
    const pg = []
    for (let i = 0; i < RUNS; i++) pg.push(pgbenchAlone(script(1), DURATION))
    log(`${name} pgbench, one client: p99 ${pg.map((r) => r.p99.toFixed(1)).join(', ')} ms`)
    rows.push(`| ${name} | PostgreSQL alone (pgbench, the same statements, one at a time; POSTs/s) | ${Math.round(median(pg.map((r) => r.tps))).toLocaleString('en')} | — | ${cell(pg)} | — |`)
    for (const batch of [1, 2, 4, 8]) {
      const paced = []
      for (let i = 0; i < RUNS; i++) paced.push(pgbenchAlone(script(batch), DURATION, { rate, batch }))
      log(`${name} pgbench at ${rate}/s, ${batch} a statement: p99 ${paced.map((r) => r.p99.toFixed(1)).join(', ')} ms, ${paced.map((r) => r.tps.toFixed(0)).join(', ')} POSTs/s`)
      const how = batch === 1 ? `a transaction a POST, ${CONNECTIONS} clients` : `${batch} POSTs a statement, 2 clients`
      rows.push(`| ${name} | PostgreSQL alone, paced (pgbench -R, ${how}; POSTs/s done) | ${Math.round(median(paced.map((r) => r.tps))).toLocaleString('en')} | ${rate.toLocaleString('en')} | ${cell(paced)} | — |`)
    }
  }
  rows.push(`| ${name} | floor server (no service) | — | ${rate.toLocaleString('en')} | ${median(floors.map((r) => r.p50)).toFixed(1)} | ${median(floors.map((r) => r.p99)).toFixed(1)} (${Math.min(...floors.map((r) => r.p99)).toFixed(1)}–${Math.max(...floors.map((r) => r.p99)).toFixed(1)}) | ${median(floors.map((r) => r.lateP99)).toFixed(1)} |`)
  for (const s of services) {
    const p = paced.get(s.name)
    const p99s = p.map((r) => r.p99)
    rows.push(`| ${name} | ${s.name} | ${Math.round(median(peak.get(s.name))).toLocaleString('en')} | ${rate.toLocaleString('en')} | ${median(p.map((r) => r.p50)).toFixed(1)} | **${median(p99s).toFixed(1)}** (${Math.min(...p99s).toFixed(1)}–${Math.max(...p99s).toFixed(1)}) | ${median(p.map((r) => r.lateP99)).toFixed(1)} |`)
  }
}
process.stdout.write([
  `### Tail latency at half of peak (${CONNECTIONS} connections, median of ${RUNS} rounds of ${DURATION} s, variants in turn; load average ${load1.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end)`,
  '',
  '| request | variant | peak req/s | paced rate | p50 ms | p99 ms (min–max) | generator late p99 ms |',
  '|---|---|---|---|---|---|---|',
  ...rows,
  '',
  ...services.map((s) => `- ${s.name} (\`node ${s.flags} dist/main.cjs\`): peak RSS (VmHWM) over all its loads ${Math.round(hwm(s.child.pid))} MB.`),
  ''
].join('\n'))
await db.end()
process.exit(0)
