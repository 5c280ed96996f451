// The event retention (EVENTS_RETENTION): expired events are removed batch by batch, from the
// start of the feed, and nothing newer than the retention goes; a feed cursor, ?after= or SSE
// Last-Event-ID from before the oldest kept event gets 410 CURSOR_EXPIRED with the oldest cursor
// still served, which reads on without a gap; an active webhook subscription keeps what it has
// not received, a failing one does not (and its deliveries record the loss); one session
// removes at a time (server backend: the embedded database has one session); the background job
// removes what expired. Events are made old by moving their time back, not by waiting.
import t from 'tap'
import { sql } from 'kysely'
import pg from 'pg'
import { removeExpiredEvents } from '../../src/events/events.repository.js'
import { backend, build, collection, expectError, feature, session, square } from '../helper.js'

const DAY_MS = 86_400_000
const RETENTION_MS = 30 * DAY_MS

const ctx = await build(t, { EVENTS_RETENTION: '30d', EVENTS_RETENTION_CHECK_MS: 3_600_000 })
const { app, db } = ctx
const editor = await session(ctx, 'editor', 'org-a')

interface Event { id: string, type: string, subject: string }

async function feed (query = ''): Promise<{ events: Event[], next: string }> {
  const res = await app.inject({ method: 'GET', url: `/events${query}`, headers: editor.headers })
  if (res.statusCode !== 200) throw new Error(`GET /events${query}: ${res.statusCode} ${res.body}`)
  return res.json()
}

async function create (id: string, x: number): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature(id, { coordinates: square(x, -40) })) })
  if (res.statusCode !== 201) throw new Error(`POST: ${res.statusCode} ${res.body}`)
  return res.json().id
}

/** Moves the given sources' events 40 days back. */
async function age (ids: string[]): Promise<void> {
  await sql`UPDATE events SET time = now() - interval '40 days' WHERE subject = ANY(${ids}::text[])`.execute(db)
}

const count = async (): Promise<number> => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM events`.execute(db)).rows[0]?.n)
const mark = async () => (await sql<{ txid: string, seq: string, total: string }>`SELECT removed_txid::text AS txid, removed_seq::text AS seq, removed_total::text AS total FROM events_retention`.execute(db)).rows[0]

t.test('removed in batches, oldest first, nothing newer than the retention; 410 with the oldest cursor', async (t) => {
  const start = (await feed()).next
  const old: string[] = []
  for (let i = 0; i < 7; i++) old.push(await create(`old-${i}`, i * 2))
  const middle = (await feed(`?after=${encodeURIComponent(start)}&limit=3`)).next
  const recent: string[] = []
  for (let i = 0; i < 3; i++) recent.push(await create(`new-${i}`, 20 + i * 2))
  await age(old)
  const before = await count()

  const batches: Array<number | undefined> = []
  for (;;) {
    const n = await removeExpiredEvents(db, RETENTION_MS, 3)
    batches.push(n)
    if (n === undefined || n < 3) break
  }
  t.same(batches, [3, 3, 1], 'seven expired events, removed three at a time, in three transactions')
  t.equal(await count(), before - 7)
  const left = await sql<{ subject: string }>`SELECT subject FROM events WHERE subject = ANY(${[...old, ...recent]}::text[]) ORDER BY txid, seq`.execute(db)
  t.same(left.rows.map((r) => r.subject), recent, 'every event newer than the retention is kept, every older one is gone')
  t.equal((await mark())?.total, '7')
  t.equal(await removeExpiredEvents(db, RETENTION_MS, 3), 0, 'nothing more to remove')

  for (const [name, query] of [['the start cursor', start], ['a cursor inside the removed events', middle]] as const) {
    const res = await app.inject({ method: 'GET', url: `/events?after=${encodeURIComponent(query)}`, headers: editor.headers })
    const body = expectError(t, res, 410, 'CURSOR_EXPIRED')
    t.type(body.oldest, 'string', `${name}: 410 with the oldest cursor`)
    const resumed = await feed(`?after=${encodeURIComponent(body.oldest as string)}`)
    t.same(resumed.events.filter((e) => e.type === 'source.created').map((e) => e.subject), recent, 'the oldest cursor reads on from the oldest kept event')
  }
  const fresh = await feed()
  t.same(fresh.events.filter((e) => e.type === 'source.created').map((e) => e.subject), recent, 'without a cursor the feed starts at the oldest kept event')
  t.equal((await feed(`?after=${encodeURIComponent(fresh.next)}`)).events.length, 0, 'a cursor after the removed events is served')

  const sse = await app.inject({ method: 'GET', url: '/events/stream', headers: { ...editor.headers, 'last-event-id': start } })
  t.equal(expectError(t, sse, 410, 'CURSOR_EXPIRED').oldest, (await app.inject({ method: 'GET', url: `/events?after=${encodeURIComponent(start)}`, headers: editor.headers })).json().oldest, 'SSE Last-Event-ID: the same 410')
  expectError(t, await app.inject({ method: 'GET', url: `/events/stream?after=${encodeURIComponent(middle)}`, headers: editor.headers }), 410, 'CURSOR_EXPIRED')
})

t.test('an active subscription keeps the events it has not received; a failing one does not, and its deliveries say so', async (t) => {
  const id = 'sub_retention0000000000000'
  const [account] = (await sql<{ id: string }>`SELECT id FROM accounts LIMIT 1`.execute(db)).rows
  await sql`UPDATE events SET time = now() - interval '40 days'`.execute(db)
  const delivered = await count()
  // A loopback address: refused by the SSRF check, so every attempt fails without leaving the machine.
  await sql`INSERT INTO webhook_subscriptions (id, organisation, created_by, url, types, secret, after_txid, after_seq)
    VALUES (${id}, 'org-a', ${account?.id}::uuid, 'https://127.0.0.1/hook', ARRAY['source.created'], 'whsec_dGVzdA==', events_horizon(), 0)`.execute(db)
  const ids: string[] = []
  for (let i = 0; i < 4; i++) ids.push(await create(`held-${i}`, 40 + i * 2))
  await age(ids)
  await create('held-new', 50)
  t.equal(await removeExpiredEvents(db, RETENTION_MS, 100), delivered, 'the expired events before its position are removed')
  t.equal(await count(), 5, 'those after it are not, while the subscription is active')
  await sql`UPDATE webhook_subscriptions SET status = 'failing', next_attempt_at = now() WHERE id = ${id}`.execute(db)
  t.equal(await removeExpiredEvents(db, RETENTION_MS, 100), 4, 'removed once the subscription is failing')
  const skipped = async () => (await sql<{ error: string }>`SELECT error FROM webhook_deliveries WHERE subscription_id = ${id} AND error LIKE 'not sent:%'`.execute(db)).rows
  for (let i = 0; i < 600 && (await skipped()).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.match((await skipped())[0]?.error, /removed by the retention/, 'the deliverer records what the retention removed before it was sent')
  await sql`DELETE FROM webhook_subscriptions WHERE id = ${id}`.execute(db)
})

t.test('one session removes at a time', { skip: backend === 'embedded' ? 'the embedded database has one session' : false }, async (t) => {
  const other = new pg.Client({ connectionString: ctx.url })
  await other.connect()
  t.teardown(() => other.end())
  await other.query('BEGIN')
  await other.query('SELECT pg_advisory_xact_lock(events_retention_lock_key())')
  t.equal(await removeExpiredEvents(db, RETENTION_MS, 100), undefined, 'another session holds the lock: this one returns at once')
  await other.query('COMMIT')
  t.equal(await removeExpiredEvents(db, RETENTION_MS, 100), 0)
})

t.test('the background job removes expired events and keeps the others', async (t) => {
  const bg = await build(t, { EVENTS_RETENTION: '30d', EVENTS_RETENTION_CHECK_MS: 100, EVENTS_RETENTION_BATCH: 2 })
  const writer = await session(bg, 'editor', 'org-a')
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const res = await bg.app.inject({ method: 'POST', url: '/sources', headers: writer.headers, payload: collection(feature(`bg-${i}`, { coordinates: square(i * 2, 60) })) })
    ids.push(res.json().id)
  }
  await sql`UPDATE events SET time = now() - interval '40 days' WHERE subject = ANY(${ids.slice(0, 3)}::text[])`.execute(bg.db)
  const removed = async () => Number((await sql<{ total: string }>`SELECT removed_total::text AS total FROM events_retention`.execute(bg.db)).rows[0]?.total)
  for (let i = 0; i < 600 && await removed() < 3; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(await removed(), 3, 'the three old events removed (in batches of two)')
  const left = await sql<{ subject: string }>`SELECT subject FROM events WHERE type = 'source.created' ORDER BY txid, seq`.execute(bg.db)
  t.same(left.rows.map((r) => r.subject), ids.slice(3), 'the newer ones kept')
})
