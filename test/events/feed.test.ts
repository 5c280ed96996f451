// The change feed: every event type, from the API and from plain SQL (psql on the server
// backend); CloudEvents 1.0 as the schema says; organisation scoping; paging with cursors that
// never skip, forged and unknown cursors refused; and the late commit: a transaction that began
// first and commits last still reaches a reader that passed its place (server backend: the
// embedded database has one session).
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'kysely'
import pg from 'pg'
import { CloudEventSchema, FeedSchema } from '../../src/events/events.schema.js'
import { cursorCodec } from '../../src/events/cursor.js'
import { TEST_SECRET, backend, build, collection, createDatabase, expectError, feature, session, square } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const viewerA = await session(ctx, 'viewer', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'hq')

interface Event { id: string, type: string, subject: string, data: Record<string, unknown>, time: string, specversion: string, source: string }

async function feed (headers: Record<string, string>, query = ''): Promise<{ events: Event[], next: string }> {
  const res = await app.inject({ method: 'GET', url: `/events${query}`, headers })
  if (res.statusCode !== 200) throw new Error(`GET /events${query}: ${res.statusCode} ${res.body}`)
  const body = res.json()
  if (!Value.Check(FeedSchema, body)) throw new Error(`feed body outside its schema: ${res.body}`)
  return body
}

/** Every event after `after` (all pages, `limit` a page). */
async function readAll (headers: Record<string, string>, after?: string, limit = 1000): Promise<{ events: Event[], next: string }> {
  const events: Event[] = []
  let cursor = after
  for (;;) {
    const page = await feed(headers, `?limit=${limit}${cursor !== undefined ? `&after=${encodeURIComponent(cursor)}` : ''}`)
    events.push(...page.events)
    cursor = page.next
    if (page.events.length < limit) return { events, next: cursor }
  }
}

async function create (headers: Record<string, string>, id: string, coordinates = square(10, 50)): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(feature(id, { coordinates })) })
  if (res.statusCode !== 201) throw new Error(`POST: ${res.statusCode} ${res.body}`)
  return res.json().id
}

t.test('source.created, conflict.started, conflict.ended and source.deleted from the API, each organisation its own', async (t) => {
  const startA = (await readAll(editorA.headers)).next
  const startB = (await readAll(editorB.headers)).next
  const a = await create(editorA.headers, 'api-a', square(20, 40))
  const b = await create(editorB.headers, 'api-b', square(20.5, 40))
  const del = await app.inject({ method: 'DELETE', url: `/sources/?id=${b}`, headers: editorB.headers })
  t.equal(del.statusCode, 200)

  const seenA = (await readAll(editorA.headers, startA)).events
  t.same(seenA.map((e) => [e.type, e.subject]), [['source.created', a], ['conflict.started', a], ['conflict.ended', a], ['conflict.resolved', a]], 'org-a: its source, the conflict seen from it (resolved by the delete)')
  for (const e of seenA) t.ok(Value.Check(CloudEventSchema, e), `${e.type} is a CloudEvent as documented`)
  t.match(seenA[0], { specversion: '1.0', source: '/events', id: /^evt_\d+$/, data: { id: a, feature_id: 'api-a', start_at: '2024-01-01T00:00:00Z', end_at: '2024-12-31T00:00:00Z' } })
  t.match(seenA[1]?.data, { source_id: a, other_id: b, overlap_ratio: Number, overlap_m2: Number, start_at: '2024-01-01T00:00:00Z' })
  t.notOk('organisation' in (seenA[1]?.data ?? {}), 'nothing of the other organisation but its source id')
  t.ok((seenA[1]?.data.overlap_ratio as number) > 0.4 && (seenA[1]?.data.overlap_ratio as number) < 0.6)

  const seenB = (await readAll(editorB.headers, startB)).events
  t.same(seenB.map((e) => [e.type, e.subject]), [['source.created', b], ['conflict.started', b], ['source.deleted', b], ['conflict.ended', b], ['conflict.resolved', b]],
    'org-b: its source created, the conflict from its side, then deleted (the conflict ends with it, its owner read from its events)')
  t.match(seenB[2]?.data, { id: b, feature_id: 'api-b' })
})

t.test('viewers read, other organisations see nothing of it, admins see all or one organisation', async (t) => {
  const start = (await readAll(admin.headers)).next
  const a = await create(editorA.headers, 'scope-a', square(30, 10))
  t.same((await readAll(viewerA.headers, (await readAll(viewerA.headers)).next)).events, [], 'nothing new after the head')
  const all = (await readAll(admin.headers, start)).events
  t.same(all.map((e) => e.subject), [a])
  t.same((await readAll(admin.headers, start)).events.map((e) => e.type), ['source.created'])
  const onlyB = await feed(admin.headers, `?organisation=org-b&after=${encodeURIComponent(start)}`)
  t.same(onlyB.events, [], 'admin, one organisation: not org-a\'s')
  const onlyA = await feed(admin.headers, `?organisation=org-a&after=${encodeURIComponent(start)}`)
  t.same(onlyA.events.map((e) => e.subject), [a])
  const fromB = (await readAll(editorB.headers)).events
  t.notOk(fromB.some((e) => e.subject === a), 'org-b never sees org-a\'s source')
  expectError(t, await app.inject({ method: 'GET', url: '/events?organisation=org-a', headers: editorB.headers }), 403, 'FORBIDDEN')
})

t.test('pages of one event walk the whole feed, in order, each once', async (t) => {
  for (let i = 0; i < 3; i++) await create(editorA.headers, `page-${i}`, square(40 + i * 2, 10))
  const whole = (await readAll(admin.headers)).events
  const paged = (await readAll(admin.headers, undefined, 1)).events
  t.same(paged.map((e) => e.id), whole.map((e) => e.id))
  t.equal(new Set(whole.map((e) => e.id)).size, whole.length, 'no event twice')
  const next = (await feed(admin.headers, '?limit=1000')).next
  t.same((await feed(admin.headers, `?after=${encodeURIComponent(next)}`)).events, [], 'next of the last page: nothing new')
})

t.test('forged, malformed and unknown cursors are a 400; a bad limit is a 400', async (t) => {
  const { next } = await feed(admin.headers, '?limit=1')
  const [txid, seq, mac] = next.split('.') as [string, string, string]
  const forged = `${txid}.${BigInt(seq) + 1n}.${mac}`
  const ours = cursorCodec(TEST_SECRET)
  const future = ours.encode({ txid: '99999999999', seq: '1' })
  const other = cursorCodec('another-secret-of-at-least-32-bytes-long!!').encode({ txid: '1', seq: '1' })
  for (const cursor of [forged, 'abc', '1.2', other, future, `${next}x`, '0.0.AAAAAAAAAAAAAAAAAAAAAA']) {
    const body = expectError(t, await app.inject({ method: 'GET', url: `/events?after=${encodeURIComponent(cursor)}`, headers: admin.headers }), 400, 'INVALID_CURSOR')
    t.equal(body.details?.[0]?.pointer, '?after')
  }
  for (const limit of ['0', '1001', 'x', '-1']) {
    const res = await app.inject({ method: 'GET', url: `/events?limit=${limit}`, headers: admin.headers })
    t.equal(res.statusCode, 400, `limit=${limit}`)
  }
  expectError(t, await app.inject({ method: 'GET', url: '/events' }), 401, 'UNAUTHORIZED')
})

t.test('plain SQL writes emit every event type too: INSERT, UPDATE, DELETE of sources, and the conflicts they make and end', async (t) => {
  const start = (await readAll(admin.headers)).next
  const one = 'src_sqlWrittenSource00001'
  const two = 'src_sqlWrittenSource00002'
  const insert = (id: string, org: string, x: number) => `INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES ('${id}', 'by-sql', '${org}', '${editorA.account.id}', ST_GeomFromText('POLYGON((${x} 10, ${x + 1} 10, ${x + 1} 11, ${x} 11, ${x} 10))', 4326), tstzrange('2024-01-01', '2024-06-01'))`
  const statements = [
    insert(one, 'org-a', 60),
    insert(two, 'org-b', 60.5),
    `UPDATE sources SET period = tstzrange('2024-02-01', '2024-06-01') WHERE id = '${one}'`,
    `DELETE FROM sources WHERE id = '${two}'`,
    `DELETE FROM sources WHERE id = '${one}'`
  ]
  const hasPsql = spawnSync('psql', ['--version']).status === 0
  if (backend === 'server' && hasPsql) {
    for (const statement of statements) {
      const r = spawnSync('psql', [ctx.url, '-v', 'ON_ERROR_STOP=1', '-c', statement], { encoding: 'utf8' })
      t.equal(r.status, 0, `psql: ${r.stderr}`)
    }
  } else {
    for (const statement of statements) await sql.raw(statement).execute(db)
  }
  const seen = (await readAll(admin.headers, start)).events
  const of = (id: string) => seen.filter((e) => e.subject === id).map((e) => e.type)
  t.same(of(one), ['source.created', 'conflict.started', 'source.updated', 'conflict.ended', 'conflict.started', 'conflict.ended', 'conflict.resolved', 'source.deleted'])
  t.same(of(two), ['source.created', 'conflict.started', 'conflict.ended', 'conflict.started', 'source.deleted', 'conflict.ended', 'conflict.resolved'])
  t.match(seen.find((e) => e.type === 'source.updated')?.data, { id: one, feature_id: 'by-sql', start_at: '2024-02-01T00:00:00Z', end_at: '2024-06-01T00:00:00Z' })
  const bAll = (await readAll(editorB.headers)).events
  t.same(bAll.filter((e) => e.subject === two).map((e) => e.type), of(two), 'org-b: every event of its source, the last conflict.ended too (its owner read from its events)')
  t.notOk(bAll.some((e) => e.subject === one), 'and none of org-a\'s')
})

t.test('a transaction that began first and commits last is still delivered to a reader that read past it', { skip: backend === 'embedded' ? 'server backend only: the embedded database has one session' : false }, async (t) => {
  const start = (await readAll(admin.headers)).next
  const slow = new pg.Client({ connectionString: ctx.url })
  const fast = new pg.Client({ connectionString: ctx.url })
  await slow.connect()
  await fast.connect()
  t.teardown(() => Promise.all([slow.end(), fast.end()]))
  const insert = (id: string, x: number) => `INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES ('${id}', '${id}', 'org-a', '${editorA.account.id}', ST_GeomFromText('POLYGON((${x} 70, ${x + 1} 70, ${x + 1} 71, ${x} 71, ${x} 70))', 4326), tstzrange('2024-01-01', '2024-06-01'))`
  const first = 'src_lateCommitFirst000001'
  const second = 'src_lateCommitSecond00001'
  // Each session's first write loads PostGIS and compiles the triggers (a second or more on a
  // loaded machine): done first, rolled back, so the second write below is quick.
  for (const [client, x] of [[slow, 110], [fast, 113]] as const) {
    await client.query('BEGIN')
    await client.query(insert(`src_lateCommitWarmUp${x}000`, x))
    await client.query('ROLLBACK')
  }
  await slow.query('BEGIN')
  await slow.query(insert(first, 100))
  const held = slow.query('SELECT pg_sleep(3)').then(() => slow.query('COMMIT'))
  await fast.query(insert(second, 103))
  const early = await readAll(admin.headers, start)
  t.notOk(early.events.some((e) => e.subject === first), 'the open transaction\'s event is not visible yet')
  t.notOk(early.events.some((e) => e.subject === second), 'and the later one waits behind it, so the reader\'s position stays before both')
  await held
  const late = await readAll(admin.headers, early.next)
  t.same(late.events.map((e) => e.subject), [first, second], 'both come after the commit, the first-begun first')
})

t.test('a transaction open in another database of the server does not hold the feed back', { skip: backend === 'embedded' ? 'server backend only: the embedded database is alone' : false }, async (t) => {
  const start = (await readAll(admin.headers)).next
  const elsewhere = new pg.Client({ connectionString: await createDatabase(t, { empty: true }) })
  const here = new pg.Client({ connectionString: ctx.url })
  await elsewhere.connect()
  await here.connect()
  t.teardown(() => Promise.all([elsewhere.end(), here.end()]))
  await elsewhere.query('BEGIN')
  const { rows } = await elsewhere.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')
  const xid = rows[0]?.xid ?? '0'
  const created = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(feature('beside-elsewhere', { coordinates: square(140, 10, 0.5) })) })
  t.equal(created.statusCode, 201)
  const { id } = created.json()
  // Read until served (the other transaction stays open throughout): one read may find the
  // horizon briefly lower, when a transaction of yet another database ends between its snapshot
  // and its read of pg_stat_activity; held back by `elsewhere`, it would never be served.
  let served: string[] = []
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    served = (await readAll(admin.headers, start)).events.filter((e) => e.subject === id).map((e) => e.type)
    if (served.length > 0) break
  }
  t.same(served, ['source.created'], 'a write here is served while it stays open')
  // One statement, one snapshot. The snapshot's xmin is cluster-wide: another test file's
  // transaction (a CREATE DATABASE … TEMPLATE) may be older still, so it is at most the xid.
  const { rows: after } = await here.query<{ h: string, running: boolean, held: boolean }>(
    `SELECT events_horizon()::text AS h,
            $1::xid8 IN (SELECT pg_snapshot_xip(pg_current_snapshot())) AS running,
            pg_snapshot_xmin(pg_current_snapshot()) <= $1::xid8 AS held`, [xid])
  t.match(after[0], { running: true, held: true }, 'the other database\'s transaction is still running, and the snapshot\'s xmin would hold the feed at it')
  t.ok(BigInt(after[0]?.h ?? '0') > BigInt(xid), 'but the feed\'s horizon is past it')

  // The same open transaction in this database holds the feed back, as the late commit needs.
  // The horizon may be lower than it: an older transaction here (an autovacuum's ANALYZE), or one
  // of another database that ends between the snapshot and events_horizon()'s read of
  // pg_stat_activity, counts as well (sql/functions/events.sql).
  await here.query('BEGIN')
  const { rows: own } = await here.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')
  const other = new pg.Client({ connectionString: ctx.url })
  await other.connect()
  t.teardown(() => other.end())
  const { rows: held } = await other.query<{ h: string, x: string }>('SELECT events_horizon()::text AS h, $1::xid8::text AS x', [own[0]?.xid])
  t.ok(held[0] !== undefined && BigInt(held[0].h) <= BigInt(held[0].x), `one open here holds the horizon at or before it (${held[0]?.h} ≤ ${held[0]?.x})`)
  const behind = await app.inject({ method: 'POST', url: '/sources', headers: editorA.headers, payload: collection(feature('behind-open-here', { coordinates: square(142, 10, 0.5) })) })
  t.equal(behind.statusCode, 201)
  const behindId: string = behind.json().id
  t.notOk((await readAll(admin.headers, start)).events.some((e) => e.subject === behindId), 'a write committed after it began is not served while it stays open')
  await here.query('ROLLBACK')
  await elsewhere.query('ROLLBACK')
})
