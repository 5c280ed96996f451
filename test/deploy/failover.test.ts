// Faults that keep data: the service on the Patroni recipe (deploy/patroni, a primary and a
// synchronous standby, DATABASE_URL naming both with target_session_attrs=read-write) under a
// write load of clients that retry 503s, through four faults: the primary's node SIGKILLed
// (PostgreSQL and Patroni together), the primary cut from the service (every service connection
// terminated, again and again), the standby stopped (lagging), and the WAL archive failing (its
// disk full). After each: the statuses the clients saw are 201, 503 (with Retry-After) and, for a
// retry of a write the lost answer of which had committed, 409; and the database holds every
// acknowledged write once, with the id and version the client was told, and no other; the event
// feed, read through the faults with its cursor, has every source's created event, none twice.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import pg from 'pg'
import { openDatabase } from '../../src/db/open.js'
import { type HaCluster, haToolsInstalled, startHaCluster } from '../../deploy/patroni/cluster.mjs'
import { addAccount, backend, collection, feature, square, startService, targetConfig } from '../helper.js'


/** One client's record of a write: what it sent, every status it saw, and what it was told at the end. */
interface Attempt { featureId: string, statuses: number[], id?: string, retryAfter: boolean }

class Writers {
  readonly log: Attempt[] = []
  private running = true
  private readonly done: Array<Promise<void>>
  private n = 0

  constructor (private readonly base: string, private readonly token: string, prefix: string, clients: number, private readonly diagnose: () => Promise<string>) {
    this.done = Array.from({ length: clients }, (_, k) => this.client(`${prefix}-${k}`, k))
  }

  private async client (name: string, k: number): Promise<void> {
    while (this.running) {
      const i = this.n++
      // Apart from each other: no conflicts to compute, so the load is of commits.
      const a: Attempt = { featureId: `${name}-${i}`, statuses: [], retryAfter: true }
      this.log.push(a)
      const body = JSON.stringify(collection(feature(a.featureId, { coordinates: square(-170 + (i % 300) * 1.1, -80 + k * 10, 0.01) })))
      for (;;) {
        let status: number
        try {
          const res = await fetch(`${this.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(30_000) })
          status = res.status
          const json = await res.json() as { id?: string }
          if (status === 201) a.id = json.id
          if (status === 503 && res.headers.get('retry-after') === null) a.retryAfter = false
        } catch {
          status = 0 // no answer: the service itself went away (it must not)
        }
        a.statuses.push(status)
        if (status !== 503 && status !== 0) break
        await sleep(100)
      }
    }
  }

  /** Writes until `until` resolves, then lets the clients finish their last write. */
  async stop (): Promise<void> {
    this.running = false
    await Promise.all(this.done)
  }

  /** The statuses seen so far, and the writes still waiting for an answer. */
  summary (): string {
    const statuses = new Map<number, number>()
    for (const a of this.log) for (const s of a.statuses) statuses.set(s, (statuses.get(s) ?? 0) + 1)
    const waiting = this.log.filter((a) => a.statuses.length === 0 || a.statuses.at(-1) === 503 || a.statuses.at(-1) === 0).length
    return `statuses seen: ${JSON.stringify(Object.fromEntries(statuses))}, ${this.log.length} writes, ${waiting} without a final answer`
  }

  /** Waits until `count` more writes have been acknowledged. */
  async acknowledged (count: number, timeoutMs = 60_000): Promise<void> {
    const target = this.log.filter((a) => a.id !== undefined).length + count
    const deadline = Date.now() + timeoutMs
    while (this.log.filter((a) => a.id !== undefined).length < target) {
      if (Date.now() > deadline) throw new Error(`fewer than ${count} writes acknowledged in ${timeoutMs} ms; ${this.summary()}\n${await this.diagnose()}`)
      await sleep(50)
    }
  }
}

async function faults (t: Test): Promise<void> {
  // Loopback only, in a temporary directory; the archive fails while `archive-full` exists (as
  // `cp` fails on a full disk).
  const dir = mkdtempSync(join(tmpdir(), 'source-registry-ha-test-'))
  const archiveFull = join(dir, 'archive-full')
  const archive = join(dir, 'archive')
  const cluster: HaCluster = await startHaCluster({
    dir,
    nodes: 2,
    synchronous: true,
    archiveCommand: `test ! -f ${archiveFull} && test ! -f ${archive}/%f && cp %p ${archive}/%f`,
    stopOnExit: true
  })
  t.teardown(() => { cluster.stop() })

  const migrated = spawnSync(process.execPath, ['dist/cli.js', 'migrate'], { env: { PATH: process.env.PATH, DATABASE_URL: cluster.url }, encoding: 'utf8' })
  t.equal(migrated.status, 0, `migrate through the multi-host URL: ${migrated.stderr}`)

  const { db } = await openDatabase(targetConfig(cluster.url), { poolMax: 2 })
  t.teardown(() => db.destroy())
  const editor = await addAccount(db, { role: 'editor', organisation: 'org-ha' })

  const service = await startService(t, cluster.url, { DB_CONNECT_TIMEOUT_MS: '3000', DB_STATEMENT_TIMEOUT_MS: '10000', EVENTS_POLL_MS: '100', METRICS_TOKEN: 'metrics-token-for-the-test' })
  const tokenRes = await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: editor.email, password: editor.password }) })
  const token = ((await tokenRes.json()) as { token: string }).token

  /**
   * When writes stall: what each node says (asked directly, each with its own short timeouts) of
   * its role, its synchronous standby and replication, and of the sessions that wait; Patroni's
   * view; and the service's last log lines.
   */
  async function diagnose (): Promise<string> {
    const out: string[] = []
    for (const node of cluster.nodes) {
      const client = new pg.Client({ connectionString: cluster.hostUrl(node.name), connectionTimeoutMillis: 2000, statement_timeout: 2000, application_name: 'failover-test-diagnosis' })
      client.on('error', () => {})
      try {
        await client.connect()
        const q = async (text: string): Promise<string> => JSON.stringify((await client.query(text)).rows)
        out.push(`${node.name}: ${await q("SELECT pg_is_in_recovery() AS recovery, current_setting('synchronous_standby_names') AS sync_names, current_setting('synchronous_commit') AS sync_commit")}`)
        out.push(`  replication: ${await q('SELECT application_name, state, sync_state, sent_lsn, flush_lsn, replay_lsn FROM pg_stat_replication')}`)
        out.push(`  sessions: ${await q("SELECT application_name, state, wait_event_type, wait_event, left(query, 60) AS query, now() - query_start AS running FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")}`)
      } catch (err) {
        out.push(`${node.name}: ${(err as Error).message}`)
      } finally {
        await client.end().catch(() => {})
      }
    }
    out.push(`patroni: ${JSON.stringify((await cluster.view().catch(() => undefined))?.members ?? null)}`)
    const { exitCode, signalCode } = service.child
    out.push(`service: ${exitCode === null && signalCode === null ? 'running' : `exited (${exitCode ?? signalCode}): status 0 is a write it never answered`}; its last lines:\n${service.lines.slice(-15).join('\n')}`)
    return out.join('\n')
  }

  // A feed reader that follows /events through every fault, as a client would.
  const feed: Array<{ id: string, type: string, subject: string }> = []
  let reading = true
  const reader = (async () => {
    let after: string | undefined
    while (reading) {
      try {
        const res = await fetch(`${service.base}/events?limit=1000${after === undefined ? '' : `&after=${after}`}`, { headers: { authorization: `Bearer ${token}` } })
        if (res.status === 200) {
          const page = await res.json() as { events: Array<{ id: string, type: string, subject: string }>, next: string }
          feed.push(...page.events)
          after = page.next
          if (page.events.length > 0) continue
        }
      } catch { /* the service is there; a fault is a 503 */ }
      await sleep(200)
    }
  })()

  /** Every write acknowledged is stored once, as told; statuses only 201/409/503 with Retry-After. */
  async function reconcile (t: Test, log: Attempt[]): Promise<void> {
    const statuses = new Map<number, number>()
    for (const a of log) for (const s of a.statuses) statuses.set(s, (statuses.get(s) ?? 0) + 1)
    t.comment(`statuses seen: ${JSON.stringify(Object.fromEntries(statuses))}`)
    const unexpected = [...statuses.keys()].filter((s) => ![201, 409, 503].includes(s))
    // What the service logged for them (its errors), so that a failure says why.
    if (unexpected.length > 0) t.comment(`the service's errors:\n${service.lines.filter((l) => /"level":50/.test(l)).slice(-5).join('\n')}`)
    t.same(unexpected, [], 'clients saw only 201, 503 and (a retry of a write that had committed) 409')
    t.ok(log.every((a) => a.retryAfter), 'every 503 had Retry-After')
    t.ok(log.every((a) => a.statuses.at(-1) !== 409 || a.statuses.includes(503)), 'a 409 only for a retry after a 503')
    const ids = log.map((a) => a.featureId)
    const { rows } = await sql<{ id: string, feature_id: string, version: number }>`
      SELECT id, feature_id, version FROM sources WHERE feature_id = ANY(${ids})`.execute(db)
    const stored = new Map<string, Array<{ id: string, version: number }>>()
    for (const r of rows) stored.set(r.feature_id, [...(stored.get(r.feature_id) ?? []), { id: r.id, version: r.version }])
    const acknowledged = log.filter((a) => a.id !== undefined)
    const missing = acknowledged.filter((a) => stored.get(a.featureId)?.[0]?.id !== a.id)
    t.same(missing.map((a) => a.featureId), [], `every one of the ${acknowledged.length} acknowledged writes is stored with the id it was given`)
    t.same([...stored].filter(([, v]) => v.length > 1).map(([k]) => k), [], 'none stored twice')
    t.same(rows.filter((r) => r.version !== 1).map((r) => r.feature_id), [], 'each at version 1 (a retry made no second version)')
    const committedUnseen = log.filter((a) => a.statuses.at(-1) === 409)
    t.same(committedUnseen.filter((a) => stored.get(a.featureId)?.length !== 1).map((a) => a.featureId), [], `each of the ${committedUnseen.length} retries answered 409 found its first attempt stored once`)
    const unanswered = log.filter((a) => a.id === undefined && a.statuses.at(-1) !== 409)
    t.same(unanswered.map((a) => a.featureId).filter((f) => stored.has(f)), [], 'nothing stored that no client was told of (a 503 with no later 409 means not stored)')
  }

  await t.test('SIGKILL of the primary node under load: writes go on on the new primary, nothing acknowledged lost', async (t) => {
    const old = await cluster.leader()
    const writers = new Writers(service.base, token, 'kill', 4, diagnose)
    await writers.acknowledged(40)
    cluster.kill(old)
    const killedAt = Date.now()
    await writers.acknowledged(40)
    await writers.stop()
    const leader = await cluster.leader()
    t.not(leader, old, `${leader} took over from ${old}`)
    t.comment(`writes resumed within ${Date.now() - killedAt} ms of the kill (figures: bench/failover.mjs)`)
    t.ok(writers.log.some((a) => a.statuses.includes(503)), 'writes in flight at the kill got 503')
    await reconcile(t, writers.log)
    const ready = await (await fetch(`${service.base}/ready`)).json() as { database?: { primary: string, failovers: number } }
    t.equal(ready.database?.primary, new URL(cluster.hostUrl(leader)).host, '/ready names the new primary')
    t.equal(ready.database?.failovers, 1, '/ready counts the failover')
    const metrics = await (await fetch(`${service.base}/metrics`, { headers: { authorization: 'Bearer metrics-token-for-the-test' } })).text()
    t.match(metrics, /source_registry_db_failovers_total 1/, '/metrics counts it')
    // The old node comes back as the new primary's synchronous standby (pg_rewind).
    cluster.startNode(old)
    await cluster.waitReady(1, 120_000)
  })

  await t.test('the primary cut from the service (its connections terminated, again and again): 503s, then writes go on', async (t) => {
    const writers = new Writers(service.base, token, 'cut', 4, diagnose)
    await writers.acknowledged(20)
    const leader = await cluster.leader()
    const { db: direct } = await openDatabase(targetConfig(cluster.hostUrl(leader)), { poolMax: 1 })
    for (let i = 0; i < 20; i++) {
      await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'source-registry' AND pid <> pg_backend_pid()`.execute(direct)
      await sleep(100)
    }
    await direct.destroy()
    await writers.acknowledged(20)
    await writers.stop()
    await reconcile(t, writers.log)
  })

  await t.test('the synchronous standby stopped (lagging): writes wait for it, none lost', async (t) => {
    const leader = await cluster.leader()
    const standby = cluster.nodes.find((n) => n.name !== leader)?.name as string
    const writers = new Writers(service.base, token, 'lag', 4, diagnose)
    await writers.acknowledged(20)
    cluster.pause(standby, true)
    await sleep(3000)
    cluster.pause(standby, false)
    await writers.acknowledged(20)
    await writers.stop()
    await reconcile(t, writers.log)
  })

  await t.test('the WAL archive failing (its disk full): writes go on, the archive catches up once it has room', async (t) => {
    const leader = await cluster.leader()
    const { db: direct } = await openDatabase(targetConfig(cluster.hostUrl(leader)), { poolMax: 1 })
    t.teardown(() => direct.destroy())
    writeFileSync(archiveFull, '')
    const failedBefore = (await sql<{ n: number }>`SELECT failed_count::int AS n FROM pg_stat_archiver`.execute(direct)).rows[0]?.n ?? 0
    const writers = new Writers(service.base, token, 'archive', 4, diagnose)
    await writers.acknowledged(20)
    await sql`SELECT pg_switch_wal()`.execute(direct)
    await writers.acknowledged(20)
    for (let i = 0; i < 100 && ((await sql<{ n: number }>`SELECT failed_count::int AS n FROM pg_stat_archiver`.execute(direct)).rows[0]?.n ?? 0) === failedBefore; i++) await sleep(100)
    t.ok(((await sql<{ n: number }>`SELECT failed_count::int AS n FROM pg_stat_archiver`.execute(direct)).rows[0]?.n ?? 0) > failedBefore, 'the archiver failed')
    const pending = (await sql<{ wal: string }>`SELECT pg_walfile_name(pg_current_wal_lsn()) AS wal`.execute(direct)).rows[0]?.wal as string
    rmSync(archiveFull)
    await sql`SELECT pg_switch_wal()`.execute(direct)
    let archived = ''
    for (let i = 0; i < 200; i++) {
      archived = (await sql<{ last: string | null }>`SELECT last_archived_wal AS last FROM pg_stat_archiver`.execute(direct)).rows[0]?.last ?? ''
      if (archived.slice(8) >= pending.slice(8)) break
      await sleep(100)
    }
    t.ok(archived.slice(8) >= pending.slice(8), `the archive caught up (${archived} ≥ ${pending})`)
    await writers.stop()
    await reconcile(t, writers.log)
  })

  await t.test('the event feed, read through every fault, has each stored source once', async (t) => {
    const { rows } = await sql<{ id: string }>`SELECT id FROM sources WHERE feature_id ~ '^(kill|cut|lag|archive)-'`.execute(db)
    await sleep(1000)
    reading = false
    await reader
    const created = feed.filter((e) => e.type === 'source.created')
    const subjects = new Set(created.map((e) => e.subject))
    t.same(rows.map((r) => r.id).filter((id) => !subjects.has(id)), [], `every one of ${rows.length} stored sources has its created event`)
    t.equal(new Set(feed.map((e) => e.id)).size, feed.length, 'no event twice')
  })
}

if (backend !== 'server') {
  t.plan(0, 'server backend only (TEST_BACKEND=server): the faults are of a PostgreSQL server and its HA agent')
} else if (!haToolsInstalled()) {
  t.plan(0, 'patroni and etcd are not installed (apt-get install patroni etcd-server python3-etcd; .ci/run installs them)')
} else {
  // In a subtest: the root test ends itself once idle after a teardown is added (tap's autoend),
  // and setting up the cluster leaves it idle for long.
  await t.test('faults on the Patroni recipe', faults)
}
