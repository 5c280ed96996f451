// API keys against the password's token: GET /sources/?id= and OGC API items in small windows,
// each with the token of POST /token (a JWT), an API key as Bearer, the key as the password of
// HTTP Basic, and a token of POST /oauth/token (a JWT checked against its key); and a route
// without a database read, where authentication is most of the work. One service as
// `npm start` runs it (ACCOUNT_CACHE_TTL_SECONDS at its default), autocannon in its own process,
// BENCH_RUNS interleaved rounds so drift hits every variant alike; prints a Markdown table of
// req/s (median, min–max) and the service's own CPU time per request (from /proc: on a machine
// whose cores other work shares, the steadier measure of what authentication costs), each with
// its ratio to the JWT's. Then the authentication hook alone, in this process on the same
// database: its CPU time per call for each credential (caches warm, as under load).
// Usage: npm run build && node bench/keys.mjs
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { availableParallelism, loadavg } from 'node:os'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort } from './setup.mjs'
import { buildApp } from '../dist/app.js'
import { loadConfig } from '../dist/config.js'
import { openDatabase } from '../dist/db/open.js'

const DURATION = Number(process.env.BENCH_DURATION ?? 3)
const RUNS = Number(process.env.BENCH_RUNS ?? 9)
const CONNECTIONS = 16
const GET_ROWS = 10_000
const log = (m) => process.stderr.write(`[keys] ${m}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const { env, db, seed } = await benchDatabase(log)
await seed(1, GET_ROWS)
await db.query('VACUUM (ANALYZE) sources')

const port = await freePort()
const base = `http://127.0.0.1:${port}`
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', PORT: String(port), JWT_SECRET, RATE_LIMIT_MAX: '1000000000', LOGIN_MAX_FAILURES: '1000000000' },
  stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => service.kill())
for (let i = 0; i < 200; i++) {
  try { if ((await fetch(`${base}/ready`)).status === 200) break } catch {}
  await sleep(100)
}

const json = async (res) => { if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`); return res.json() }
const { token } = await json(await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) }))
const made = await json(await fetch(`${base}/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', scope: 'read' }) }))
const oauth = await json(await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'client_credentials', client_id: made.id, client_secret: made.key }) }))

const auths = [
  ['JWT (POST /token)', `Bearer ${token}`],
  ['key as Bearer', `Bearer ${made.key}`],
  ['key in HTTP Basic', `Basic ${Buffer.from(`bench:${made.key}`).toString('base64')}`],
  ['OAuth2 token (POST /oauth/token)', `Bearer ${oauth.access_token}`]
]
// Small windows in the seeded grid (setup.mjs: 0.005° boxes every 0.01° from -15, -15): ~9 sources each.
const windows = Array.from({ length: 50 }, () => {
  const x = -15 + Math.random() * 29
  const y = -15 + Math.random() * 0.01
  return `/collections/sources/items?bbox=${x.toFixed(3)},${y.toFixed(3)},${(x + 0.03).toFixed(3)},${(y + 0.03).toFixed(3)}`
})
const scenarios = [
  ['GET /sources/?id=, random ids of 10,000', { kind: 'get', getRows: GET_ROWS }],
  ['items, 0.03° windows', { kind: 'paths', paths: windows }],
  // No database: what authentication costs at its largest share of a request.
  ['GET /collections/sources/schema (no database)', { kind: 'paths', paths: ['/collections/sources/schema'] }]
]

// The service's user + system CPU so far, in ms (/proc/<pid>/stat fields 14 and 15, in ticks of 10 ms).
const serviceCpuMs = () => readFileSync(`/proc/${service.pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 13).reduce((a, v) => a + Number(v), 0) * 10

function load (scenario, authorization, duration) {
  const s = { url: base, connections: CONNECTIONS, duration, authorization, ...scenario }
  const cpu0 = serviceCpuMs()
  const r = JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify(s)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  return { ...r, cpuUsPerRequest: (serviceCpuMs() - cpu0) * 1000 / Math.max(1, r.total) }
}
for (const [, scenario] of scenarios) for (const [, authorization] of auths) load(scenario, authorization, 2)
const results = new Map()
const load0 = loadavg()[0]
for (let round = 0; round < RUNS; round++) {
  for (const [name, scenario] of scenarios) {
    for (const [how, authorization] of auths) {
      log(`round ${round + 1}: ${name}: ${how}`)
      const r = load(scenario, authorization, DURATION)
      if (r.non2xx + r.errors > 0) throw new Error(`${name}, ${how}: ${r.non2xx} non-2xx, ${r.errors} errors (${JSON.stringify(r.statusCodes)})`)
      results.set(`${name}|${how}`, [...(results.get(`${name}|${how}`) ?? []), r])
    }
  }
}

const lines = [
  `API keys against the password's token: ${RUNS} interleaved rounds of ${DURATION} s, ${CONNECTIONS} connections, autocannon; load average ${load0.toFixed(1)} → ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`,
  'req/s: median (min–max), and the median of each round\'s ratio to the JWT run just before it (a pair shares the machine\'s conditions more than the medians do); CPU: the service\'s CPU time per request, median, and the JWT\'s over it (above 1: cheaper)',
  '',
  `| scenario | measure | ${auths.map(([how]) => how).join(' | ')} |`,
  `|---|---|${auths.map(() => '---').join('|')}|`
]
for (const [name] of scenarios) {
  const of = (how) => results.get(`${name}|${how}`)
  const jwtCpu = median(of(auths[0][0]).map((r) => r.cpuUsPerRequest))
  lines.push(`| ${name} | req/s | ${auths.map(([how]) => {
    const rps = of(how).map((r) => r.rps)
    const m = median(rps)
    const paired = median(of(how).map((r, round) => r.rps / of(auths[0][0])[round].rps))
    return `${Math.round(m).toLocaleString('en')} (${Math.round(Math.min(...rps))}–${Math.round(Math.max(...rps))})${how === auths[0][0] ? '' : `, ${paired.toFixed(2)}×`}`
  }).join(' | ')} |`)
  lines.push(`| | CPU µs/req | ${auths.map(([how]) => {
    const m = median(of(how).map((r) => r.cpuUsPerRequest))
    return `${Math.round(m)}${how === auths[0][0] ? '' : `, ${(jwtCpu / m).toFixed(2)}×`}`
  }).join(' | ')} |`)
}

// The hook alone: app.authenticate on a request-shaped object, CALLS times per credential and
// round, rounds interleaved; the process's CPU time per call.
const CALLS = Number(process.env.BENCH_AUTH_CALLS ?? 100_000)
const config = { ...loadConfig({ ...env, NODE_ENV: 'production', LOG_LEVEL: 'silent', JWT_SECRET }), JWT_SECRET }
const { db: appDb } = await openDatabase(config)
const app = await buildApp({ config, db: appDb })
await app.ready()
const hook = { ...Object.fromEntries(auths.map(([how]) => [how, []])) }
for (let round = 0; round < RUNS; round++) {
  for (const [how, authorization] of auths) {
    const request = { headers: { authorization }, ip: '127.0.0.1' }
    await app.authenticate(request, {})
    const cpu0 = process.cpuUsage()
    for (let i = 0; i < CALLS; i++) await app.authenticate(request, {})
    const cpu = process.cpuUsage(cpu0)
    hook[how].push((cpu.user + cpu.system) * 1000 / CALLS)
  }
}
await app.close()
const jwtNs = median(hook[auths[0][0]])
lines.push('', `The authentication hook alone (app.authenticate in-process, ${CALLS.toLocaleString('en')} calls × ${RUNS} interleaved rounds): CPU ns per call, median (min–max), and the JWT's over it`, '',
  `| ${auths.map(([how]) => how).join(' | ')} |`, `|${auths.map(() => '---').join('|')}|`,
  `| ${auths.map(([how]) => {
    const ns = hook[how]
    return `${Math.round(median(ns))} (${Math.round(Math.min(...ns))}–${Math.round(Math.max(...ns))})${how === auths[0][0] ? '' : `, ${(jwtNs / median(ns)).toFixed(2)}×`}`
  }).join(' | ')} |`)
process.stdout.write(`${lines.join('\n')}\n`)
await db.end()
process.exit(0)
