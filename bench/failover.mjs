// Failover on the Patroni recipe (deploy/patroni): the service with a DATABASE_URL naming both
// nodes (target_session_attrs=read-write), 8 clients POSTing one feature each in a closed loop,
// retrying 503s. For synchronous and asynchronous replication in turn: BENCH_FAILOVERS times, the
// primary's node (Patroni and PostgreSQL) is SIGKILLed, the time from the kill to the first 201
// of a request sent after it is taken, and the killed node started again (it rejoins as the
// standby); at the end every write a client was answered 201 is looked up by id: the lost ones
// are counted. Then single-feature POST throughput (bench/load.mjs, 16 connections,
// BENCH_DURATION s, BENCH_RUNS runs) with a synchronous standby, an asynchronous one, and none
// (the same recipe with one node). Prints a Markdown table.
// Usage: npm run build && node bench/failover.mjs   (BENCH_MODES=asynchronous: one mode only)
import { execFileSync, spawn } from 'node:child_process'
import pg from 'pg'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, freePort } from './setup.mjs'
import { startHaCluster } from '../deploy/patroni/cluster.mjs'

const FAILOVERS = Number(process.env.BENCH_FAILOVERS ?? 10)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const CLIENTS = 8
const log = (m) => process.stderr.write(`[failover] ${m}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))

async function setUp ({ nodes, synchronous }) {
  const cluster = await startHaCluster({ nodes, synchronous, log })
  const env = { PATH: process.env.PATH, DATABASE_URL: cluster.url }
  execFileSync(process.execPath, ['dist/cli.js', 'migrate'], { env, stdio: ['ignore', 'ignore', 'inherit'] })
  execFileSync(process.execPath, ['dist/cli.js', 'account', 'add', '--email', 'bench@example.org', '--org', 'bench', '--role', 'editor', '--password-stdin'], { env, input: PASSWORD, stdio: ['pipe', 'ignore', 'inherit'] })
  const port = await freePort()
  const service = spawn(process.execPath, SERVICE_ARGS, {
    env: { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', JWT_SECRET, RATE_LIMIT_MAX: '1000000000', PORT: String(port), DB_CONNECT_TIMEOUT_MS: '3000' },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 1200; i++) { try { if ((await fetch(`${base}/ready`)).ok) break } catch {} await sleep(100) }
  const token = (await (await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) })).json()).token
  const stop = async () => {
    service.kill('SIGKILL')
    await new Promise((resolve) => service.once('exit', resolve))
    cluster.stop()
  }
  return { cluster, base, port, token, stop }
}

/** 8 closed-loop clients; each 201 logged with its send time, id and answer time. */
function writers (base, token, tag) {
  const acked = []
  const statuses = new Map()
  let running = true
  let n = 0
  const client = async (k) => {
    while (running) {
      const i = n++
      const body = JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', id: `${tag}-${i}`, properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-12-31T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: [[[-170 + (i % 3000) * 0.1, -80 + k * 5], [-170 + (i % 3000) * 0.1 + 0.01, -80 + k * 5], [-170 + (i % 3000) * 0.1 + 0.01, -80 + k * 5 + 0.01], [-170 + (i % 3000) * 0.1, -80 + k * 5]]] } }] })
      for (;;) {
        const sent = Date.now()
        let status = 0
        try {
          const res = await fetch(`${base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(30_000) })
          status = res.status
          const json = await res.json()
          if (status === 201) acked.push({ featureId: `${tag}-${i}`, id: json.id, sent, at: Date.now() })
        } catch { /* counted as 0 */ }
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
        if (status !== 503 && status !== 0) break
        await sleep(100)
      }
    }
  }
  const done = Promise.all(Array.from({ length: CLIENTS }, (_, k) => client(k)))
  return { acked, statuses, stop: async () => { running = false; await done } }
}

async function failovers (synchronous) {
  const mode = synchronous ? 'synchronous' : 'asynchronous'
  const { cluster, base, token, stop } = await setUp({ nodes: 2, synchronous })
  const w = writers(base, token, mode)
  const times = []
  for (let i = 0; i < FAILOVERS; i++) {
    await cluster.waitReady(1, 180_000)
    await sleep(2000)
    const leader = await cluster.leader()
    const killedAt = Date.now()
    cluster.kill(leader)
    let first
    while (first === undefined) {
      await sleep(20)
      first = w.acked.find((a) => a.sent > killedAt)
      if (Date.now() - killedAt > 120_000) throw new Error('no write within 120 s of the kill')
    }
    times.push(first.at - killedAt)
    log(`${mode} failover ${i + 1}: ${leader} killed, first write after ${first.at - killedAt} ms`)
    await sleep(1000)
    cluster.startNode(leader)
  }
  await w.stop()
  const leader = await cluster.leader()
  const db = new pg.Client({ connectionString: cluster.hostUrl(leader) })
  await db.connect()
  const { rows } = await db.query('SELECT id FROM sources WHERE id = ANY($1)', [w.acked.map((a) => a.id)])
  await db.end()
  const lost = w.acked.length - rows.length
  log(`${mode}: ${w.acked.length} writes acknowledged, ${lost} lost; statuses ${JSON.stringify(Object.fromEntries(w.statuses))}`)
  await stop()
  return { mode, times, acked: w.acked.length, lost, statuses: Object.fromEntries(w.statuses) }
}

async function throughput (name, opts) {
  const { base, token, stop, cluster } = await setUp(opts)
  if (opts.nodes > 1) await cluster.waitReady(1, 180_000)
  const run = (duration, i) => JSON.parse(execFileSync(process.execPath, ['bench/load.mjs', JSON.stringify({ url: base, connections: 16, duration, token, runTag: `t${Date.now().toString(36)}-${i}`, kind: 'post', features: 1, vertices: 5 })], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }))
  run(2, 'warm')
  const rates = []
  for (let i = 0; i < RUNS; i++) {
    const r = run(DURATION, i)
    rates.push(r.rps)
    log(`${name}: ${Math.round(r.rps)} POST/s, errors ${r.errors + r.non2xx}`)
  }
  await stop()
  return { name, rates }
}

const MODES = (process.env.BENCH_MODES ?? 'synchronous,asynchronous').split(',')
const results = []
for (const mode of MODES) results.push(await failovers(mode === 'synchronous'))
const rates = []
rates.push(await throughput('synchronous standby', { nodes: 2, synchronous: true }))
rates.push(await throughput('asynchronous standby', { nodes: 2, synchronous: false }))
rates.push(await throughput('no standby', { nodes: 1, synchronous: false }))

const lines = [
  `${FAILOVERS} failovers per mode (SIGKILL of the primary's Patroni and PostgreSQL; ttl 10 s, loop_wait 1 s), ${CLIENTS} writing clients`,
  '',
  '| replication | kill → first write, median | worst | all (s) | writes acknowledged | acknowledged and lost |',
  '|---|---|---|---|---|---|',
  ...results.map((r) => `| ${r.mode} | ${(median(r.times) / 1000).toFixed(1)} s | ${(Math.max(...r.times) / 1000).toFixed(1)} s | ${r.times.map((x) => (x / 1000).toFixed(1)).join(', ')} | ${r.acked} | ${r.lost} |`),
  '',
  `POST /sources (1 feature), 16 connections, ${RUNS} runs of ${DURATION} s: POST/s median (min–max), ratio to no standby`,
  '',
  '| standby | POST/s | ratio |',
  '|---|---|---|',
  ...rates.map((r) => `| ${r.name} | ${Math.round(median(r.rates))} (${Math.round(Math.min(...r.rates))}–${Math.round(Math.max(...r.rates))}) | ${(median(r.rates) / median(rates[2].rates)).toFixed(2)}× |`)
]
process.stdout.write(`${lines.join('\n')}\n`)
process.exit(0)
