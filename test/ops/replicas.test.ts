// Read replicas for real (server backend only): a primary of its own, a streaming replica made
// from it with pg_basebackup, and the service (node dist/main.cjs) on both. Reads are served by the
// replica (its pg_stat_database counters move, the primary's do not); with the replica's replay
// paused, a POST then a GET from the same client finds the new source every time (1,000 tries)
// while a client that wrote nothing reads the stale replica, and a second instance sees the write
// when the client echoes X-Min-LSN; the service keeps answering when the replica is stopped, and
// goes back to it when it returns.
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { startPostgis, startReplica } from '../../scripts/postgis.mjs'
import { pgbouncerBinary, startPgBouncer } from '../../scripts/pgbouncer.mjs'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, collection, feature, square, startService, targetConfig, type RunningService } from '../helper.js'

const METRICS_TOKEN = 'replica-test-metrics-token'

if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server)')
} else {
  await withReplica()
}

async function query<T> (url: string, text: string): Promise<T[]> {
  // A hot standby may cancel the test's own query when it conflicts with replay (40001): again.
  for (let attempt = 1; ; attempt++) {
    const client = new pg.Client({ connectionString: url })
    // Replay resuming may terminate this very connection (FATAL 40001, conflict with recovery):
    // the query rejects with it, and the client's 'error' must not go unheard (an uncaught
    // exception that failed the file).
    client.on('error', () => {})
    await client.connect()
    try {
      return (await client.query(text)).rows as T[]
    } catch (err) {
      if ((err as { code?: string }).code !== '40001' || attempt >= 5) throw err
    } finally {
      await client.end()
    }
  }
}

/**
 * Resumes replay on the replica. Replay then catches up on what waited, and may cancel the very
 * session that resumed it (a recovery conflict, 40001) before its answer arrives: the resume has
 * happened all the same, which a fresh session checks.
 */
async function resumeReplay (url: string): Promise<void> {
  try {
    await query(url, 'SELECT pg_wal_replay_resume()')
  } catch (err) {
    if ((err as { code?: string }).code !== '40001') throw err
    const [state] = await query<{ state: string }>(url, 'SELECT pg_get_wal_replay_pause_state() AS state')
    if (state?.state !== 'not paused') throw err
  }
}

async function waitUntil (what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await sleep(50)
  }
}

async function withReplica (): Promise<void> {
  const primary = await startPostgis()
  t.teardown(() => primary.stop())
  const withDb = (url: string) => url.replace(/\/postgres$/, '/registry')
  await query(primary.url, 'CREATE DATABASE registry')
  const primaryUrl = withDb(primary.url)
  execFileSync(process.execPath, ['dist/cli.js', 'migrate'], { env: { PATH: process.env.PATH, DATABASE_URL: primaryUrl }, stdio: 'ignore' })
  const { db } = await openDatabase(targetConfig(primaryUrl), { poolMax: 2 })
  t.teardown(() => db.destroy())
  const accounts = await Promise.all([0, 1, 2, 3, 4].map(() => addAccount(db, { role: 'editor', organisation: 'org-r' })))
  const replica = await startReplica(primary)
  t.teardown(() => replica.stop())
  const replicaUrl = withDb(replica.url)

  // Items pages of over 5 features are read in chunks (a streamed body), each chunk a read.
  const env = { DATABASE_REPLICA_URLS: replicaUrl, REPLICA_CHECK_MS: '100', REPLICA_MAX_WAIT_MS: '20', REPLICA_MAX_LAG_MS: '600000', METRICS_TOKEN, RATE_LIMIT_MAX: '1000000', ITEMS_ROWS_PER_QUERY: '5' }
  const service = await startService(t, primaryUrl, env)
  const other = await startService(t, primaryUrl, env)

  const ready = async (s: RunningService) => (await (await fetch(`${s.base}/ready`)).json()) as { status: string, replicas: Array<{ name: string, state: string, lag_ms: number | null }> }
  const replicaState = async (s: RunningService) => (await ready(s)).replicas[0]?.state
  const metric = async (s: RunningService, line: RegExp) => {
    const text = await (await fetch(`${s.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
    return Number(line.exec(text)?.[1] ?? 0)
  }
  const replicaReads = (s: RunningService) => metric(s, /^source_registry_db_reads_total\{pool="replica-1"\} (\S+)$/m)
  await waitUntil('both instances find the replica healthy', async () => await replicaState(service) === 'healthy' && await replicaState(other) === 'healthy')

  const tokenOf = async (email: string) => ((await (await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'correct horse battery staple' }) })).json()) as { token: string }).token
  const tokens = await Promise.all(accounts.map((a) => tokenOf(a.email)))
  const headersOf = (i: number) => ({ authorization: `Bearer ${tokens[i] as string}`, 'content-type': 'application/json' })
  let n = 0
  // The replica has replayed a write (its X-Min-LSN), as the replica itself says: the service's
  // lag_ms may still be 0 from a check made before the write.
  const replayed = (lsn: string | null) => waitUntil(`the replica has replayed ${lsn}`, async () =>
    (await query<{ done: boolean }>(replicaUrl, `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`))[0]?.done === true)
  const post = async (s: RunningService, i: number) => {
    const res = await fetch(`${s.base}/sources`, { method: 'POST', headers: headersOf(i), body: JSON.stringify(collection(feature(`f-${n++}`, { coordinates: square(n % 100, (n / 100) % 80, 0.001) }))) })
    if (res.status !== 201) throw new Error(`POST ${res.status}: ${await res.text()}`)
    return { id: ((await res.json()) as { id: string }).id, lsn: res.headers.get('x-min-lsn') }
  }
  const get = async (s: RunningService, i: number, id: string, extra: Record<string, string> = {}) => (await fetch(`${s.base}/sources/?id=${id}`, { headers: { ...headersOf(i), ...extra } })).status

  t.test('reads are served by the replica: its pg_stat_database counters move, the primary\'s do not', async (t) => {
    for (let i = 0; i < 40; i++) await post(service, 0)
    await waitUntil('the replica has replayed the writes', async () => Number((await query<{ n: string }>(replicaUrl, 'SELECT count(*) AS n FROM sources'))[0]?.n) === 40)
    // pg_stat_database's commits on the replica, and the rows of `sources` each side read.
    const counters = `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = 'registry')::float8 AS commits,
      (SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE relname = 'sources')::float8 AS tuples`
    type Counters = { commits: number, tuples: number }
    // An idle backend reports its table statistics within a second, or, when that flush is put
    // off (a busy shared-stats lock), up to 10 s later (PostgreSQL 15's PGSTAT_IDLE_INTERVAL), so the writes' own reads of `sources` (the conflict rule's) are all
    // counted only after that; the same wait before the last reading, so that a read the primary
    // did serve is counted too.
    const STATS_FLUSH_MS = 11_000
    await sleep(STATS_FLUSH_MS)
    const [replicaBefore] = await query<Counters>(replicaUrl, counters)
    const [primaryBefore] = await query<Counters>(primaryUrl, counters)
    const readsBefore = await replicaReads(service)
    const READS = 30
    for (let i = 0; i < READS; i++) {
      const res = await fetch(`${service.base}/collections/sources/items?limit=100`, { headers: headersOf(1) })
      t.equal(res.status, 200)
      // Each page read to its end, as a client does: its later chunks are read from the database
      // as the client takes them.
      const page = (await res.json()) as { numberReturned: number }
      if (i === 0) t.equal(page.numberReturned, 40)
    }
    t.ok(await replicaReads(service) - readsBefore >= READS, 'the service counts them as replica reads (a page is read in chunks)')
    let replicaAfter: Counters | undefined
    await waitUntil('the replica\'s statistics count the reads', async () => {
      [replicaAfter] = await query<Counters>(replicaUrl, counters)
      return (replicaAfter?.tuples ?? 0) - (replicaBefore?.tuples ?? 0) >= READS * 40
    }, 10_000)
    t.ok((replicaAfter?.commits ?? 0) - (replicaBefore?.commits ?? 0) >= READS, 'pg_stat_database on the replica: a transaction per read at least')
    await sleep(STATS_FLUSH_MS)
    const [primaryAfter] = await query<Counters>(primaryUrl, counters)
    t.equal((primaryAfter?.tuples ?? 0) - (primaryBefore?.tuples ?? 0), 0, 'the primary read no row of sources')
  })

  t.test('replay paused: a POST then a GET from the same client sees the new source, 1,000 times', async (t) => {
    await query(replicaUrl, 'SELECT pg_wal_replay_pause()')
    t.teardown(() => resumeReplay(replicaUrl))
    const waitsBefore = await metric(service, /^source_registry_read_your_writes_wait_seconds_count\{served_by="primary"\} (\S+)$/m)
    const statuses = new Map<number, number>()
    const CLIENTS = 4
    await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < 1000 / CLIENTS; i++) {
        const { id } = await post(service, c)
        const status = await get(service, c, id)
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
      }
    }))
    t.same([...statuses], [[200, 1000]], 'every GET after its POST: 200')
    t.equal(await replicaState(service), 'healthy', 'the replica was still in use (REPLICA_MAX_LAG_MS not reached)')
    t.equal(await metric(service, /^source_registry_read_your_writes_wait_seconds_count\{served_by="primary"\} (\S+)$/m) - waitsBefore, 1000,
      'each read waited REPLICA_MAX_WAIT_MS for the paused replica, then read the primary')

    // A page read in chunks after the client's writes: every chunk sees them, not only the first.
    const box = [150, -60, 150.1, -59.9]
    for (let i = 0; i < 15; i++) {
      const x = 150 + i * 0.005
      const res = await fetch(`${service.base}/sources`, { method: 'POST', headers: headersOf(0), body: JSON.stringify(collection(feature(`chunked-${i}`, { coordinates: [[[x, -60], [x + 0.002, -60], [x + 0.002, -59.998], [x, -59.998], [x, -60]]] }))) })
      t.equal(res.status, 201)
    }
    const page = await fetch(`${service.base}/collections/sources/items?limit=50&bbox=${box.join(',')}`, { headers: headersOf(0) })
    t.equal(((await page.json()) as { numberReturned: number }).numberReturned, 15, 'a streamed page of 15 (chunks of 5) has all 15 new sources')

    const { id, lsn } = await post(service, 0)
    t.match(lsn, /^[0-9A-F]+\/[0-9A-F]+$/, 'a write answers its LSN in X-Min-LSN')
    t.equal(await get(service, 4, id), 404, 'a client with no write of its own reads the paused replica: stale')
    t.equal(await get(other, 0, id), 404, 'another instance knows nothing of the write without the header')
    t.equal(await get(other, 0, id, { 'x-min-lsn': lsn as string }), 200, 'with X-Min-LSN echoed, another instance reads it too')
    // PUT, PATCH and DELETE answer their LSN as POST does (issue 34): the same client reads its change.
    const version = async (s: RunningService, i: number, extra: Record<string, string> = {}) =>
      ((await (await fetch(`${s.base}/sources/?id=${id}`, { headers: { ...headersOf(i), ...extra } })).json()) as { properties: { version: number } }).properties.version
    const patched = await fetch(`${service.base}/sources/?id=${id}`, { method: 'PATCH', headers: { ...headersOf(0), 'content-type': 'application/merge-patch+json', 'if-match': 'W/"1"' }, body: '{"properties":{"end_at":"2030-01-01T00:00:00Z"}}' })
    t.equal(patched.status, 200)
    t.match(patched.headers.get('x-min-lsn'), /^[0-9A-F]+\/[0-9A-F]+$/, 'PATCH answers its LSN')
    t.equal(await version(service, 0), 2, 'and the client that patched reads version 2')
    t.equal(await version(other, 0, { 'x-min-lsn': patched.headers.get('x-min-lsn') as string }), 2, 'so does another instance given the LSN')
    const put = await fetch(`${service.base}/sources/?id=${id}`, { method: 'PUT', headers: { ...headersOf(0), 'if-match': 'W/"2"' }, body: JSON.stringify(feature('put-1', { coordinates: square(1, 1, 0.001) })) })
    t.equal(put.status, 200)
    t.match(put.headers.get('x-min-lsn'), /^[0-9A-F]+\/[0-9A-F]+$/, 'PUT answers its LSN')
    t.equal(await version(service, 0), 3)
    const deleted = await fetch(`${service.base}/sources/?id=${id}`, { method: 'DELETE', headers: { authorization: headersOf(0).authorization } })
    t.equal(deleted.status, 200)
    t.match(deleted.headers.get('x-min-lsn'), /^[0-9A-F]+\/[0-9A-F]+$/, 'DELETE answers its LSN')
    t.equal(await get(service, 0, id), 410, 'and the client that deleted reads 410')
    const lag = (await ready(service)).replicas[0]?.lag_ms ?? 0
    t.ok(lag > 100, `/ready reports the paused replica's lag (${lag} ms)`)
    t.ok(await metric(service, /^source_registry_replica_lag_seconds\{replica="replica-1"\} (\S+)$/m) > 0.1, 'and so do the metrics')
  })

  t.test('through PgBouncer (transaction pooling, one per server): replica reads, and read-your-writes with replay paused', { skip: pgbouncerBinary() === undefined && process.env.CI !== 'true' ? 'pgbouncer is not installed' : false }, async (t) => {
    const bouncers = [await startPgBouncer(primary.url), await startPgBouncer(replica.url)]
    t.teardown(() => { for (const b of bouncers) b.stop() })
    const pooled = await startService(t, (bouncers[0] as { pooled: (u: string) => string }).pooled(primaryUrl), {
      ...env, DB_POOL_MODE: 'transaction', DATABASE_REPLICA_URLS: (bouncers[1] as { pooled: (u: string) => string }).pooled(replicaUrl)
    })
    await waitUntil('the pooled instance finds the replica healthy', async () => await replicaState(pooled) === 'healthy')
    const { id, lsn } = await post(pooled, 3)
    await replayed(lsn)
    const before = await replicaReads(pooled)
    for (let i = 0; i < 10; i++) t.equal(await get(pooled, 4, id), 200)
    t.equal(await replicaReads(pooled) - before, 10, 'reads go to the replica through its PgBouncer')
    await query(replicaUrl, 'SELECT pg_wal_replay_pause()')
    t.teardown(() => resumeReplay(replicaUrl))
    const statuses = new Map<number, number>()
    for (let i = 0; i < 100; i++) {
      const { id } = await post(pooled, 3)
      const status = await get(pooled, 3, id)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
    t.same([...statuses], [[200, 100]], 'every GET after its POST: 200')
    await resumeReplay(replicaUrl)
  })

  t.test('the replica stopped: the service keeps answering; back to it when it returns', async (t) => {
    const { id, lsn } = await post(service, 1)
    await replayed(lsn)
    replica.stopServer()
    const statuses = new Map<number, number>()
    for (let i = 0; i < 50; i++) {
      const status = await get(service, 2, id)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
      const items = await fetch(`${service.base}/collections/sources/items?limit=5`, { headers: headersOf(2) })
      statuses.set(items.status, (statuses.get(items.status) ?? 0) + 1)
    }
    t.same([...statuses], [[200, 100]], 'every read answered, by the primary')
    t.equal(await replicaState(service), 'down', '/ready says the replica is down')
    t.equal((await ready(service)).status, 'ok', 'and the service is still ready')
    t.equal(await metric(service, /^source_registry_replica_up\{replica="replica-1"\} (\S+)$/m), 0)

    replica.start()
    await waitUntil('the replica is healthy again', async () => await replicaState(service) === 'healthy')
    const before = await replicaReads(service)
    for (let i = 0; i < 10; i++) t.equal(await get(service, 2, id), 200)
    t.equal(await replicaReads(service) - before, 10, 'reads go to the replica again')
    t.equal(await metric(service, /^source_registry_replica_up\{replica="replica-1"\} (\S+)$/m), 1)
  })
}
