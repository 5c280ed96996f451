// Events (issue 35): what the outbox costs writes, how fast events reach clients, how fast webhooks
// drain. One service as `npm start` runs it, on a throwaway PostGIS, EVENTS_LISTEN_URL set.
//   1. POST /sources, 1 feature (16 at once) and 1,000 features (2 at once), with the event
//      triggers enabled and disabled (ALTER TABLE … DISABLE TRIGGER), BENCH_RUNS interleaved
//      rounds of BENCH_DURATION s: req/s and the on/off ratio (median of the rounds' ratios).
//   2. Lag at 200 writes/s for BENCH_LAG_SECONDS: from each POST's 201 (after its commit) to the
//      event on an SSE stream, and to a webhook receiver on loopback: p50/p99.
//   3. Backlog: a receiver down (503) while 10,000 events are written, then up: time to drain,
//      deliveries/s, lost and duplicates.
// Usage: npm run build && node bench/events.mjs   (prints Markdown to stdout)
import { spawn } from 'node:child_process'
import http from 'node:http'
import { JWT_SECRET, PASSWORD, SERVICE_ARGS, benchDatabase, freePort } from './setup.mjs'

const DURATION = Number(process.env.BENCH_DURATION ?? 3)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const LAG_SECONDS = Number(process.env.BENCH_LAG_SECONDS ?? 5)
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 10_000)
const log = (m) => process.stderr.write(`[events] ${m}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))] }

const { url, env, db } = await benchDatabase(log)
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const service = spawn(process.execPath, SERVICE_ARGS, {
  env: { ...env, NODE_ENV: 'production', LOG_LEVEL: 'warn', PORT: String(port), JWT_SECRET, RATE_LIMIT_MAX: '1000000000', EVENTS_LISTEN_URL: url, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '100' },
  stdio: ['ignore', 'ignore', 'inherit']
})
process.on('exit', () => service.kill())
for (let i = 0; i < 200; i++) {
  try { if ((await fetch(`${base}/ready`)).status === 200) break } catch {}
  await sleep(100)
}
const json = async (res) => { if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`); return res.json() }
const { token } = await json(await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.org', password: PASSWORD }) }))
const auth = { authorization: `Bearer ${token}` }

let n = 0
// Small squares scattered so that no two conflict: the cost measured is the events', not conflicts'.
const feature = () => {
  n++
  const x = -170 + (n % 3000) * 0.1
  const y = -80 + Math.floor(n / 3000) * 0.1
  return { type: 'Feature', id: `b-${n}`, properties: { start_at: '2024-01-01', end_at: '2024-02-01' }, geometry: { type: 'Polygon', coordinates: [[[x, y], [x + 0.01, y], [x + 0.01, y + 0.01], [x, y + 0.01], [x, y]]] } }
}
const post = async (count) => {
  const res = await fetch(`${base}/sources`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'FeatureCollection', features: Array.from({ length: count }, feature) }) })
  if (res.status !== 201) throw new Error(`POST ${res.status} ${await res.text()}`)
  await res.arrayBuffer()
}
const TRIGGERS = [['sources', 'events_sources_insert'], ['sources', 'events_sources_update'], ['sources', 'events_sources_delete'], ['source_conflict_pairs', 'events_conflict_pairs_insert'], ['source_conflict_pairs', 'events_conflict_pairs_delete']]
const events = async (on) => { for (const [table, trigger] of TRIGGERS) await db.query(`ALTER TABLE ${table} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${trigger}`) }

/** Requests of `count` features, `concurrency` at once, for `seconds`: req/s. */
async function rate (count, concurrency, seconds) {
  const end = Date.now() + seconds * 1000
  let done = 0
  const t0 = Date.now()
  await Promise.all(Array.from({ length: concurrency }, async () => { while (Date.now() < end) { await post(count); done++ } }))
  return done / ((Date.now() - t0) / 1000)
}

const out = []
log('1. writes with events on and off')
for (const [name, count, concurrency, seconds] of [['POST /sources, 1 feature', 1, 16, DURATION], ['POST /sources, 1,000 features', 1000, 2, DURATION * 3]]) {
  await rate(count, concurrency, 1)
  const on = []; const off = []; const ratios = []
  for (let r = 0; r < RUNS; r++) {
    await events(false); const b = await rate(count, concurrency, seconds)
    await events(true); const a = await rate(count, concurrency, seconds)
    off.push(b); on.push(a); ratios.push(a / b)
    log(`${name}: on ${a.toFixed(1)}, off ${b.toFixed(1)} req/s`)
  }
  out.push(`| ${name} | ${median(on).toFixed(1)} | ${median(off).toFixed(1)} | ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) |`)
}
await events(true)
console.log('### Writes, events on vs off (median of rounds)\n')
console.log(`${RUNS} interleaved rounds, ${DURATION} s (1 feature, 16 at once) / ${DURATION * 3} s (1,000 features, 2 at once) each.\n`)
console.log('| scenario | on req/s | off req/s | on/off |\n|---|---|---|---|')
for (const line of out) console.log(line)

log('2. lag at 200 writes/s')
const receiver = { up: false, got: new Map(), bySubject: new Map(), deliveries: 0, firstAt: 0, lastAt: 0 }
const hook = http.createServer((req, res) => {
  let body = ''
  req.setEncoding('utf8')
  req.on('data', (c) => { body += c })
  req.on('end', () => {
    if (!receiver.up) { res.writeHead(503).end(); return }
    const id = String(req.headers['webhook-id'])
    receiver.deliveries++
    if (!receiver.got.has(id)) receiver.got.set(id, Date.now())
    const subject = JSON.parse(body).subject
    if (!receiver.bySubject.has(subject)) receiver.bySubject.set(subject, Date.now())
    receiver.lastAt = Date.now()
    if (receiver.firstAt === 0) receiver.firstAt = receiver.lastAt
    res.writeHead(204).end()
  })
})
await new Promise((r) => hook.listen(0, '127.0.0.1', r))
receiver.up = true
const sub = await json(await fetch(`${base}/subscriptions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: `http://127.0.0.1:${hook.address().port}/`, types: ['source.created'] }) }))
const sse = new Map()
const stream = http.get(`${base}/events/stream`, { headers: auth }, (res) => {
  res.setEncoding('utf8')
  let buf = ''
  res.on('data', (c) => {
    buf += c
    let i
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i); buf = buf.slice(i + 2)
      const data = block.split('\n').find((l) => l.startsWith('data: '))
      if (data !== undefined) { const e = JSON.parse(data.slice(6)); sse.set(e.subject, Date.now()) }
    }
  })
})
await sleep(500)
const committed = new Map()
const writes = []
const every = 1000 / 200
const t0 = Date.now()
for (let i = 0; i < LAG_SECONDS * 200; i++) {
  const due = t0 + i * every
  if (due > Date.now()) await sleep(due - Date.now())
  writes.push((async () => {
    const f = feature()
    const res = await fetch(`${base}/sources`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'FeatureCollection', features: [f] }) })
    const body = await res.json()
    committed.set(body.id, Date.now())
  })())
}
await Promise.all(writes)
const achieved = committed.size / ((Math.max(...committed.values()) - t0) / 1000)
await sleep(3000)
const sseLag = [...committed].filter(([id]) => sse.has(id)).map(([id, at]) => sse.get(id) - at)
const hookLag = [...committed].filter(([id]) => receiver.bySubject.has(id)).map(([id, at]) => receiver.bySubject.get(id) - at)
stream.destroy()
console.log(`\n### Lag at 200 writes/s (${committed.size} single-feature POSTs sent over ${LAG_SECONDS} s, all answered at ${achieved.toFixed(0)}/s; from the 201, which follows the commit)\n`)
console.log('| to | received | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|')
console.log(`| SSE stream (LISTEN) | ${sseLag.length} of ${committed.size} | ${pct(sseLag, 0.5)} | ${pct(sseLag, 0.99)} | ${Math.max(...sseLag)} |`)
console.log(`| webhook receiver (loopback) | ${hookLag.length} of ${committed.size} | ${pct(hookLag, 0.5)} | ${pct(hookLag, 0.99)} | ${Math.max(...hookLag)} |`)

log('3. backlog drain')
await sleep(2000)
receiver.up = false
receiver.got.clear(); receiver.bySubject.clear(); receiver.deliveries = 0; receiver.firstAt = 0
const before = Number((await db.query('SELECT count(*) FROM events')).rows[0].count)
await db.query(`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period)
  SELECT 'src_' || lpad((900000000 + g)::text, 22, '0'), 'backlog-' || g, 'bench', (SELECT id FROM accounts WHERE email = 'bench@example.org'),
    ST_MakeEnvelope(100 + (g % 500) * 0.1, 60 + (g / 500) * 0.1, 100.01 + (g % 500) * 0.1, 60.01 + (g / 500) * 0.1, 4326), '[2024-01-01Z,2024-02-01Z)'
  FROM generate_series(1, ${BACKLOG}) AS g`)
log(`${BACKLOG} events written while the receiver answers 503`)
await sleep(3000)
receiver.up = true
const up = Date.now()
// The failed subscription's next attempt is due after its backoff (WEBHOOK_RETRY_BASE_MS=100, doubling).
const isBacklog = (subject) => /^src_0{13}9\d{8}$/.test(subject)
const backlogDelivered = () => [...receiver.bySubject.keys()].filter(isBacklog).length
while (backlogDelivered() < BACKLOG && Date.now() - up < 300_000) await sleep(100)
const drained = receiver.lastAt - up
const after = Number((await db.query('SELECT count(*) FROM events')).rows[0].count)
console.log(`\n### Backlog: ${BACKLOG.toLocaleString('en')} events while the receiver was down, then up\n`)
console.log('| events | delivered (unique) | lost | duplicates | time to empty | deliveries/s (first to last) |\n|---|---|---|---|---|---|')
console.log(`| ${after - before} | ${backlogDelivered()} | ${BACKLOG - backlogDelivered()} | ${receiver.deliveries - receiver.got.size} | ${(drained / 1000).toFixed(1)} s | ${Math.round(receiver.deliveries / ((receiver.lastAt - receiver.firstAt) / 1000))} |`)
await fetch(`${base}/subscriptions/?id=${sub.id}`, { method: 'DELETE', headers: auth })
hook.close()
await db.end()
process.exit(0)
