// Tiles are drawn TILES_CONCURRENCY at a time (never more than DB_POOL_MAX − 1); the others wait
// in order holding no connection, up to TILES_QUEUE of them, and beyond that get 503 with
// Retry-After at once. A revalidation (304) never waits: it reads only the change counters; nor
// does a tile the cache holds (TILES_CACHE_BYTES, on at its default here): the counters read, it
// is sent from memory. A client that leaves while its tile waits gives its place back; one that
// leaves before its tile reaches the queue takes none. The draw is held in the database by a lock
// on source_conflict_pairs (every tile query reads it), so the test sees the queue as it is in
// service. Server backend only: the embedded database has a single connection.
import t from 'tap'
import pg from 'pg'
import { type AddressInfo, connect } from 'node:net'
import type { ServerResponse } from 'node:http'
import { backend, build, collection, feature, session } from '../helper.js'
import { tileOf, tileUrl } from './mvt.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only: holding a tile in the database needs a second connection')
} else {
  // DB_POOL_MAX 2: one tile at a time whatever TILES_CONCURRENCY says, one connection left.
  // Each tile drawn here is one not asked before (its own datetime): the cache holds only the
  // first, which is what the revalidation and the answer from memory ask for.
  const ctx = await build(t, { DB_POOL_MAX: 2, TILES_CONCURRENCY: 8, TILES_QUEUE: 2 })
  const editor = await session(ctx, 'editor', 'org-q')
  const created = await ctx.app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('queued', { coordinates: [[[10, 50], [10.01, 50], [10.01, 50.01], [10, 50.01], [10, 50]]] })) })
  await ctx.app.listen({ host: '127.0.0.1', port: 0 })
  const base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
  const tile = tileOf(10.005, 50.005, 12)
  const get = (path: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${base}${path}`, { headers: { ...editor.headers, ...headers }, signal })
  // The server's side of each request (by path), to see it hear a client leave and the answer
  // given to one that is gone.
  const served = new Map<string, ServerResponse>()
  ctx.app.server.on('request', (req: { url?: string }, res: ServerResponse) => { if (req.url !== undefined) served.set(req.url, res) })
  /** Until every one of `paths` meets `done` on the server; false after the deadline (a failure). */
  const serverSees = async (paths: string[], done: (res: ServerResponse) => boolean): Promise<boolean> => {
    const all = () => paths.every((p) => { const res = served.get(p); return res !== undefined && done(res) })
    for (let i = 0; i < 400 && !all(); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    return all()
  }

  const locker = new pg.Client({ connectionString: ctx.url })
  await locker.connect()
  t.teardown(() => locker.end())
  // Until a session of this database waits for a lock on `table`. Every database copy of the
  // server has the same table OIDs, so the database is part of the question.
  const waitsFor = async (table: string): Promise<boolean> => {
    for (let i = 0; i < 200; i++) {
      const { rows } = await locker.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks
         WHERE relation = $1::regclass AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, [table])
      if ((rows[0]?.n ?? 0) > 0) return true
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return false
  }

  t.test('one drawn, two waiting, the next refused at once; a revalidation and a cached tile answer meanwhile', async (t) => {
    t.equal(created.statusCode, 201)
    const first = await get(tileUrl(tile))
    t.equal(first.status, 200)
    const etag = first.headers.get('etag') ?? ''
    const firstBytes = Buffer.from(await first.arrayBuffer())

    await locker.query('BEGIN')
    await locker.query('LOCK TABLE source_conflict_pairs IN ACCESS EXCLUSIVE MODE')
    const settled: string[] = []
    const track = (name: string, p: Promise<Response>) => p.then(async (r) => { settled.push(name); await r.arrayBuffer(); return r })
    const drawing = track('drawing', get(tileUrl(tile, '?datetime=2024-05-01T00:00:00Z')))
    // The holder is in the database, waiting for the lock, before the others ask.
    t.ok(await waitsFor('source_conflict_pairs'), 'the first tile holds the slot')
    const waiting = [track('waiting 1', get(tileUrl(tile, '?datetime=2024-06-01T00:00:00Z'))), track('waiting 2', get(tileUrl(tile, '?datetime=2024-07-01T00:00:00Z')))]
    await new Promise((resolve) => setTimeout(resolve, 500))
    const refused = await get(tileUrl(tile, '?datetime=2024-08-01T00:00:00Z'))
    t.equal(refused.status, 503, 'a full queue: 503 at once')
    t.equal(refused.headers.get('retry-after'), '1')
    const body = await refused.json() as { code: string, message: string }
    t.equal(body.code, 'SERVICE_UNAVAILABLE')
    t.match(body.message, /busy drawing other tiles \(1 at a time, 2 waiting\)/, 'says why, with the limits in force')

    const revalidated = await get(tileUrl(tile), { 'if-none-match': etag })
    t.equal(revalidated.status, 304, 'a revalidation needs no drawing and finds a connection')
    const fromMemory = await get(tileUrl(tile))
    t.equal(fromMemory.status, 200, 'the tile the cache holds: sent while the queue is full, not refused')
    t.equal(fromMemory.headers.get('etag'), etag, 'as drawn before')
    t.same(Buffer.from(await fromMemory.arrayBuffer()), firstBytes, 'the same bytes')
    t.same(settled, [], 'meanwhile nothing drawn')

    await locker.query('COMMIT')
    const results = await Promise.all([drawing, ...waiting])
    t.same(results.map((r) => r.status), [200, 200, 200], 'all three drawn once the lock is gone')
    t.equal(settled[0], 'drawing', 'the one holding the slot first, then the two that waited')
  })

  t.test('a client that leaves while its tile waits gives its place back', async (t) => {
    await locker.query('BEGIN')
    await locker.query('LOCK TABLE source_conflict_pairs IN ACCESS EXCLUSIVE MODE')
    const drawing = get(tileUrl(tile, '?datetime=2024-09-01T00:00:00Z'))
    t.ok(await waitsFor('source_conflict_pairs'), 'the first tile holds the slot')
    const leaving = [new AbortController(), new AbortController()]
    const paths = leaving.map((_, i) => tileUrl(tile, `?datetime=2024-10-0${i + 1}T00:00:00Z`))
    const left = leaving.map((c, i) => get(paths[i] ?? '', {}, c.signal).catch((err: Error) => err.name))
    // Time to reach the queue (one that has not takes no place either: the next subtest).
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const c of leaving) c.abort()
    t.same(await Promise.all(left), ['AbortError', 'AbortError'])
    t.ok(await serverSees(paths, (res) => res.closed), 'the server heard both leave')
    // Two places free again: two more wait rather than being refused.
    const next = [get(tileUrl(tile, '?datetime=2024-11-01T00:00:00Z')), get(tileUrl(tile, '?datetime=2024-11-02T00:00:00Z'))]
    await new Promise((resolve) => setTimeout(resolve, 300))
    await locker.query('COMMIT')
    t.same((await Promise.all([drawing, ...next])).map((r) => r.status), [200, 200, 200])
  })

  t.test('a client that leaves before its tile reaches the queue takes no place in it, and nothing is drawn for it', async (t) => {
    const accounts = new pg.Client({ connectionString: ctx.url })
    await accounts.connect()
    t.teardown(() => accounts.end())

    await locker.query('BEGIN')
    await locker.query('LOCK TABLE source_conflict_pairs IN ACCESS EXCLUSIVE MODE')
    let drawn = false
    const drawing = get(tileUrl(tile, '?datetime=2024-12-01T00:00:00Z')).finally(() => { drawn = true })
    t.ok(await waitsFor('source_conflict_pairs'), 'the first tile holds the slot')
    // The next request stops in its authentication read (ACCOUNT_CACHE_TTL_SECONDS is 0 in
    // tests), before it asks for a place; its client sends the request and leaves there.
    await accounts.query('BEGIN')
    await accounts.query('LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE')
    const path = tileUrl(tile, '?datetime=2024-12-02T00:00:00Z')
    const leaver = connect((ctx.app.server.address() as AddressInfo).port, '127.0.0.1')
    const gone = new Promise((resolve) => leaver.once('close', resolve))
    leaver.on('error', () => {}) // a reset instead of an end closes it as well
    leaver.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${editor.headers.authorization}\r\n\r\n`)
    t.ok(await waitsFor('accounts'), 'its authentication read waits')
    // Our end first; the server ends its side on seeing it, so once the socket is closed here
    // the server's response has had its 'close'.
    leaver.end()
    await gone
    t.equal(served.get(path)?.closed, true, 'the server saw the client leave')
    await accounts.query('COMMIT')

    // It is answered while the first tile still holds the only slot: it never waited for one.
    // One that took a place would be answered only after the first tile (here: its statement
    // timeout), and would hold the place until then although its 'close' has passed.
    await serverSees([path], (res) => res.writableEnded || drawn)
    t.ok(served.get(path)?.writableEnded === true && !drawn, 'answered before the first tile: no place in the queue')
    t.equal(served.get(path)?.statusCode, 499, 'client closed request, nothing drawn')
    await locker.query('COMMIT')
    t.equal((await drawing).status, 200)
  })
}
