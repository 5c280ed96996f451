// Events across processes (server backend): two instances on one database and one Redis, as
// behind a load balancer. An event written through one reaches an SSE stream held on the other
// at its commit (LISTEN on EVENTS_LISTEN_URL; polls are a minute apart); a subscription's events
// are each delivered (duplicates counted, none lost) whichever instance takes them; and after
// kill -9 of both instances in the middle of a backlog, a new instance delivers all of it.
import t from 'tap'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { sql } from 'kysely'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, createDatabase, feature, freePort, square, startService, targetConfig } from '../helper.js'

const hasRedis = spawnSync('redis-server', ['--version']).status === 0
if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server): an embedded data directory serves one process')
} else if (!hasRedis && process.env.CI !== 'true') {
  t.plan(0, 'redis-server is not installed (apt-get install redis-server; .ci/run installs it)')
} else {
  await instances()
}

async function startRedis (port: number): Promise<ChildProcess> {
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis-server did not start')), 10_000)
    createInterface({ input: redis.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (/Ready to accept connections/.test(line)) { clearTimeout(timer); resolve() }
    })
  })
  return redis
}

async function until (what: string, check: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function instances (): Promise<void> {
  const redisPort = await freePort()
  const redis = await startRedis(redisPort)
  t.teardown(() => { redis.kill('SIGKILL') })
  const target = await createDatabase(t)
  const { db } = await openDatabase(targetConfig(target), { poolMax: 2 })
  t.teardown(() => db.destroy())
  const editor = await addAccount(db, { role: 'editor', organisation: 'org-a' })

  // The receiver: every POST's webhook-id, in arrival order; slow on demand.
  const seen: string[] = []
  let delayMs = 0
  const receiver = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      seen.push(String(req.headers['webhook-id']))
      setTimeout(() => res.writeHead(200).end(), delayMs)
    })
  })
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
  t.teardown(() => { receiver.closeAllConnections(); receiver.close() })
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`

  const env = {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    REDIS_TIMEOUT_MS: '3000',
    EVENTS_LISTEN_URL: target,
    // Polling (and its fallback with LISTEN, every 10 × this) far slower than any wait here: an
    // event that arrives in time came by LISTEN/NOTIFY. Webhooks do not wait for it: each
    // deliverer also looks every second.
    EVENTS_POLL_MS: '60000',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_LEASE_MS: '3000',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_RETRY_BASE_MS: '50'
  }
  const [a, b] = await Promise.all([startService(t, target, env), startService(t, target, env)])
  if (a === undefined || b === undefined) throw new Error('two instances')
  const token = ((await (await fetch(`${a.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: editor.email, password: editor.password }) })).json()) as { token: string }).token
  const auth = { authorization: `Bearer ${token}` }
  const postSources = async (base: string, features: unknown[]) => {
    const res = await fetch(`${base}/sources`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(collection(...features)) })
    if (res.status !== 201) throw new Error(`POST ${res.status} ${await res.text()}`)
    return ((await res.json()) as { sources: Array<{ id: string }> }).sources.map((s) => s.id)
  }
  let n = 0
  const next = () => { n++; return feature(`i-${n}`, { coordinates: square((n % 150) * 2 - 170, Math.floor(n / 150) * 2 - 70) }) }

  t.test('an event written through one instance reaches an SSE stream held on the other at its commit (LISTEN/NOTIFY), not at the next poll', async (t) => {
    const events: Array<{ subject: string, at: number }> = []
    let connected = false
    const req = http.get(`${b.base}/events/stream`, { headers: auth }, (res) => {
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        if (chunk.includes(': connected')) connected = true
        for (const line of chunk.split('\n')) if (line.startsWith('data: ')) events.push({ subject: JSON.parse(line.slice(6)).subject, at: Date.now() })
      })
    })
    t.teardown(() => { req.destroy() })
    // The stream is open (its first line sent) before the first write, and both instances have
    // their LISTEN in place (it is set up after start-up, beside the first look at the feed).
    await until('the stream is open', () => connected, 10_000)
    for (const end = Date.now() + 30_000; ;) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN source_registry_events'`.execute(db)
      if ((rows[0]?.n ?? 0) >= 2) break
      if (Date.now() > end) throw new Error('the instances did not LISTEN within 30 s')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const lags: number[] = []
    const posts: number[] = []
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now()
      const [id] = await postSources(a.base, [next()])
      // From the 201, which comes after the commit.
      const committed = Date.now()
      posts.push(committed - t0)
      await until('the event on the other instance', () => events.some((e) => e.subject === id), 10_000)
      lags.push((events.find((e) => e.subject === id)?.at ?? 0) - committed)
    }
    t.comment(`POST on one (ms: ${posts.join(', ')}) → SSE on the other, ms after the 201: ${lags.join(', ')}`)
    // Seconds, not the milliseconds of a quiet machine: another test file shares two cores; the
    // next poll would be a minute away.
    t.ok(lags.every((l) => l < 5000), `each within 5 s: ${lags.join(', ')}`)
  })

  t.test('two instances deliver each event of a subscription: none lost, duplicates counted, in order', async (t) => {
    const res = await fetch(`${a.base}/subscriptions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: hookUrl, types: ['source.created'] }) })
    t.equal(res.status, 201)
    const { id: subscription } = (await res.json()) as { id: string }
    t.teardown(async () => { await fetch(`${a.base}/subscriptions/?id=${subscription}`, { method: 'DELETE', headers: auth }) })
    seen.length = 0
    const written: string[] = []
    for (let i = 0; i < 20; i++) written.push(...await postSources(i % 2 === 0 ? a.base : b.base, [next(), next()]))
    const feedIds = async () => {
      const ids: string[] = []
      let after = ''
      for (;;) {
        const page = (await (await fetch(`${a.base}/events?limit=1000${after}`, { headers: auth })).json()) as { events: Array<{ id: string, subject: string }>, next: string }
        ids.push(...page.events.filter((e) => written.includes(e.subject)).map((e) => e.id))
        if (page.events.length < 1000) return ids
        after = `&after=${encodeURIComponent(page.next)}`
      }
    }
    const expected = await feedIds()
    t.equal(expected.length, 40)
    await until('all 40 delivered', () => expected.every((id) => seen.includes(id)))
    const firstSeen = [...new Set(seen)].filter((id) => expected.includes(id))
    t.same(firstSeen, expected, 'in feed order')
    const duplicates = seen.length - new Set(seen).size
    t.comment(`two instances: 40 events, ${seen.length} deliveries, ${duplicates} duplicates`)
    t.ok(duplicates <= 40, `duplicates counted: ${duplicates}`)
  })

  t.test('kill -9 of both instances during a backlog: a new instance delivers all of it', async (t) => {
    const res = await fetch(`${a.base}/subscriptions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: hookUrl, types: ['source.created'] }) })
    const { id: subscription } = (await res.json()) as { id: string }
    seen.length = 0
    delayMs = 20
    const features = Array.from({ length: 200 }, () => next())
    const written = await postSources(a.base, features)
    await until('the backlog under way', () => seen.length >= 20)
    a.child.kill('SIGKILL')
    b.child.kill('SIGKILL')
    const before = new Set(seen).size
    t.ok(before < 200, `killed mid-backlog (${before} of 200 delivered)`)
    delayMs = 0
    const c = await startService(t, target, env)
    // The killed holder's lease runs out (WEBHOOK_LEASE_MS), then the new instance sends from the last recorded position.
    await until('all 200 delivered after the restart', () => new Set(seen).size >= 200, 90_000)
    const duplicates = seen.length - new Set(seen).size
    t.comment(`kill -9 after ${before} of 200: all delivered, ${duplicates} duplicates`)
    t.equal(new Set(seen).size, 200, 'none lost')
    t.equal(written.length, 200)
    await fetch(`${c.base}/subscriptions/?id=${subscription}`, { method: 'DELETE', headers: auth })
  })
}
