// Claims made knowingly (issue 47, point 4): on_conflict=acknowledge on POST, PUT and PATCH (both
// /sources and the OGC items path). A write that would start conflicts with other organisations'
// sources is 409 CONFLICT_KEYS_REQUIRED with one key per such source; sent again citing them in
// Conflict-Keys it is stored and its new conflicts start acknowledged by the writer. The writer's
// own organisation's sources need no key; a key of an older version is stale; of two claimants
// citing the same key, the second is told the first's key; CONFLICT_POLICY=acknowledge makes it
// the default.
import t from 'tap'
import { sql } from 'kysely'
import { build, collection, expectError, feature, session } from '../helper.js'

const ctx = await build(t)
const { app } = ctx
const a = await session(ctx, 'editor', 'org-a')
const a2 = await session(ctx, 'editor', 'org-a')
const b = await session(ctx, 'editor', 'org-b')
const c = await session(ctx, 'editor', 'org-c')

type Headers = Record<string, string>
type Key = { source_id: string, key: string }
let lane = 0
const box = (x: number, y: number, w: number, h: number): number[][][] => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]
const withKeys = (headers: Headers, keys: Key[] | string[]): Headers =>
  ({ ...headers, 'conflict-keys': keys.map((k) => typeof k === 'string' ? k : k.key).join(', ') })

async function post (headers: Headers, name: string, coordinates: number[][][], query = '') {
  return await app.inject({ method: 'POST', url: `/sources${query}`, headers, payload: collection(feature(name, { coordinates })) })
}
async function create (headers: Headers, name: string, coordinates: number[][][]): Promise<string> {
  const res = await post(headers, name, coordinates)
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().id
}
/** The stances of the unresolved conflict of two sources: [mine, theirs]. */
async function stances (mine: string, theirs: string): Promise<[string, string]> {
  const { rows } = await sql<{ source_a: string, stance_a: string, stance_b: string }>`SELECT source_a, stance_a, stance_b FROM conflicts
    WHERE resolved_at IS NULL AND source_a = least(${mine}, ${theirs}) AND source_b = greatest(${mine}, ${theirs})`.execute(ctx.db)
  const r = rows[0]
  if (r === undefined) throw new Error(`no conflict of ${mine} and ${theirs}`)
  return r.source_a === mine ? [r.stance_a, r.stance_b] : [r.stance_b, r.stance_a]
}
const count = async (): Promise<number> => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM sources`.execute(ctx.db)).rows[0]?.n)

t.test('POST: 409 with one key per other organisation\'s source, nothing stored; with the keys, stored and acknowledged', async (t) => {
  const x = 10 + lane++
  const theirs = await create(b.headers, 'b-1', box(x, 0, 0.01, 0.01))
  const before = await count()
  const refused = expectError(t, await post(a.headers, 'a-1', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge'), 409, 'CONFLICT_KEYS_REQUIRED')
  t.equal(refused.conflict_keys?.length, 1)
  t.equal(refused.conflict_keys?.[0]?.source_id, theirs)
  t.match(refused.conflict_keys?.[0]?.key, /^ck_[0-9a-f]{40}$/)
  t.same(Object.keys(refused.conflict_keys?.[0] ?? {}).sort(), ['key', 'source_id'], 'the id and the key, nothing else of the other source')
  t.notMatch(refused.message, /b-1/, 'not its feature id')
  t.equal(await count(), before, 'nothing stored')

  const wrong = await post(withKeys(a.headers, ['ck_' + '0'.repeat(40)]), 'a-1', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge')
  t.same(expectError(t, wrong, 409, 'CONFLICT_KEYS_REQUIRED').conflict_keys, refused.conflict_keys, 'a key that is not its key: 409 again')
  expectError(t, await post(withKeys(a.headers, ['nonsense']), 'a-1', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge'), 400, 'VALIDATION_FAILED')

  const res = await post(withKeys(a.headers, refused.conflict_keys ?? []), 'a-1', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge')
  t.equal(res.statusCode, 201, res.body)
  const mine = res.json().id as string
  t.same(res.json().sources[0].conflicts, [theirs])
  t.same(await stances(mine, theirs), ['acknowledged', 'open'], 'the writer\'s side starts acknowledged, the other\'s open')
  const history = await sql<{ to_stance: string, organisation: string }>`SELECT h.to_stance, h.organisation FROM conflict_stances AS h
    JOIN conflicts AS c ON c.id = h.conflict_id WHERE c.source_a = least(${mine}, ${theirs}) AND c.source_b = greatest(${mine}, ${theirs})`.execute(ctx.db)
  t.same(history.rows, [{ to_stance: 'acknowledged', organisation: 'org-a' }], 'recorded in the history')
  // The setting does not outlive its transaction: an ordinary write after it starts open.
  const plain = await create(a.headers, 'a-plain', box(x + 0.007, 0, 0.01, 0.01))
  t.same(await stances(plain, theirs), ['open', 'open'])
})

t.test('no conflict, or only with the own organisation\'s sources: no key needed', async (t) => {
  const x = 10 + lane++
  const alone = await post(a.headers, 'alone', box(x, 0, 0.01, 0.01), '?on_conflict=acknowledge')
  t.equal(alone.statusCode, 201, alone.body)
  const own = await post(a2.headers, 'own', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge')
  t.equal(own.statusCode, 201, own.body)
  t.same(own.json().sources[0].conflicts, [alone.json().id], 'the conflict with its own organisation\'s source is recorded')
  t.same(await stances(own.json().id, alone.json().id), ['acknowledged', 'open'])
  // Two features of one request that overlap each other: the same organisation.
  const both = await app.inject({
    method: 'POST', url: '/sources?on_conflict=acknowledge', headers: b.headers,
    payload: collection(feature('p', { coordinates: box(x + 0.5, 0, 0.01, 0.01) }), feature('q', { coordinates: box(x + 0.505, 0, 0.01, 0.01) }))
  })
  t.equal(both.statusCode, 201, both.body)
})

t.test('a key of an older version is stale: 409 again with the new one', async (t) => {
  const x = 10 + lane++
  const theirs = await create(b.headers, 'b-stale', box(x, 0, 0.01, 0.01))
  const first = expectError(t, await post(a.headers, 'a-stale', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge'), 409, 'CONFLICT_KEYS_REQUIRED')
  // b changes its source (an attribute: a new version, the same land).
  const changed = await app.inject({ method: 'PATCH', url: `/sources/?id=${theirs}`, headers: { ...b.headers, 'content-type': 'application/merge-patch+json', 'if-match': 'W/"1"' }, payload: { properties: { note: 'v2' } } })
  t.equal(changed.statusCode, 200, changed.body)
  const stale = expectError(t, await post(withKeys(a.headers, first.conflict_keys ?? []), 'a-stale', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge'), 409, 'CONFLICT_KEYS_REQUIRED')
  t.equal(stale.conflict_keys?.[0]?.source_id, theirs)
  t.not(stale.conflict_keys?.[0]?.key, first.conflict_keys?.[0]?.key, 'the key of the new version')
  const res = await post(withKeys(a.headers, stale.conflict_keys ?? []), 'a-stale', box(x + 0.005, 0, 0.01, 0.01), '?on_conflict=acknowledge')
  t.equal(res.statusCode, 201, res.body)
})

t.test('two claimants, one key each: the second is told the first\'s key too', async (t) => {
  const x = 10 + lane++
  const theirs = await create(b.headers, 'b-race', box(x, 0, 0.02, 0.02))
  const ka = expectError(t, await post(a.headers, 'a-race', box(x + 0.005, 0.005, 0.01, 0.01), '?on_conflict=acknowledge'), 409, 'CONFLICT_KEYS_REQUIRED').conflict_keys ?? []
  const kc = expectError(t, await post(c.headers, 'c-race', box(x + 0.006, 0.006, 0.01, 0.01), '?on_conflict=acknowledge'), 409, 'CONFLICT_KEYS_REQUIRED').conflict_keys ?? []
  t.same(ka, kc, 'both were given the same key (b\'s source\'s)')
  const [ra, rc] = await Promise.all([
    post(withKeys(a.headers, ka), 'a-race', box(x + 0.005, 0.005, 0.01, 0.01), '?on_conflict=acknowledge'),
    post(withKeys(c.headers, kc), 'c-race', box(x + 0.006, 0.006, 0.01, 0.01), '?on_conflict=acknowledge')
  ])
  const statuses = [ra.statusCode, rc.statusCode].sort()
  t.same(statuses, [201, 409], `one stored, the other refused: ${ra.body} ${rc.body}`)
  const [won, lost, loser] = ra.statusCode === 201 ? [ra, rc, c] : [rc, ra, a]
  const refused = expectError(t, lost, 409, 'CONFLICT_KEYS_REQUIRED')
  t.same(refused.conflict_keys?.map((k) => k.source_id).sort(), [theirs, won.json().id].sort(), 'b\'s source and the first claimant\'s')
  const again = await post(withKeys(loser.headers, refused.conflict_keys ?? []), loser === a ? 'a-race' : 'c-race',
    loser === a ? box(x + 0.005, 0.005, 0.01, 0.01) : box(x + 0.006, 0.006, 0.01, 0.01), '?on_conflict=acknowledge')
  t.equal(again.statusCode, 201, again.body)
})

t.test('PUT and PATCH, on /sources and on the OGC items path: new conflicts need keys, those already there do not', async (t) => {
  const x = 10 + lane++
  const theirs = await create(b.headers, 'b-put', box(x, 0, 0.01, 0.01))
  const mine = await create(a.headers, 'a-put', box(x + 0.5, 0, 0.01, 0.01))
  const moved = { type: 'Feature', id: 'a-put', properties: { start_at: '2024-01-01T00:00:00Z', end_at: '2024-12-31T00:00:00Z' }, geometry: { type: 'Polygon', coordinates: box(x + 0.005, 0, 0.01, 0.01) } }
  const put = (headers: Headers, etag: string, url = `/sources/?id=${mine}&on_conflict=acknowledge`) =>
    app.inject({ method: 'PUT', url, headers: { ...headers, 'if-match': etag }, payload: moved })
  const refused = expectError(t, await put(a.headers, 'W/"1"'), 409, 'CONFLICT_KEYS_REQUIRED')
  t.equal(refused.conflict_keys?.[0]?.source_id, theirs)
  const current = await app.inject({ method: 'GET', url: `/sources/?id=${mine}`, headers: a.headers })
  t.equal(current.headers.etag, 'W/"1"', 'nothing changed')
  const res = await put(withKeys(a.headers, refused.conflict_keys ?? []), 'W/"1"', `/collections/sources/items/${mine}?on_conflict=acknowledge`)
  t.equal(res.statusCode, 200, res.body)
  t.same(await stances(mine, theirs), ['acknowledged', 'open'])
  // A PATCH that keeps the overlap starts no conflict: no key needed.
  const patch = async (url: string, etag: string, body: Record<string, unknown>, headers: Headers = a.headers) =>
    await app.inject({ method: 'PATCH', url, headers: { ...headers, 'content-type': 'application/merge-patch+json', 'if-match': etag }, payload: body })
  const kept = await patch(`/sources/?id=${mine}&on_conflict=acknowledge`, 'W/"2"', { properties: { note: 'still here' } })
  t.equal(kept.statusCode, 200, kept.body)
  // A PATCH onto a third organisation's land: its key.
  const third = await create(c.headers, 'c-put', box(x + 0.2, 0, 0.01, 0.01))
  const onto = { geometry: { type: 'Polygon', coordinates: box(x + 0.195, 0, 0.01, 0.01) } }
  const refusedPatch = expectError(t, await patch(`/collections/sources/items/${mine}?on_conflict=acknowledge`, 'W/"3"', onto), 409, 'CONFLICT_KEYS_REQUIRED')
  t.same(refusedPatch.conflict_keys?.map((k) => k.source_id), [third])
  const patched = await patch(`/sources/?id=${mine}&on_conflict=acknowledge`, 'W/"3"', onto, withKeys(a.headers, refusedPatch.conflict_keys ?? []))
  t.equal(patched.statusCode, 200, patched.body)
  t.same(await stances(mine, third), ['acknowledged', 'open'])
  // Without on_conflict (CONFLICT_POLICY=record): the header is not needed.
  const plain = await patch(`/sources/?id=${mine}`, 'W/"4"', { geometry: { type: 'Polygon', coordinates: box(x + 0.005, 0, 0.01, 0.01) } })
  t.equal(plain.statusCode, 200, plain.body)
  t.equal((await app.inject({ method: 'PATCH', url: `/sources/?id=${mine}&on_conflict=reject`, headers: { ...a.headers, 'content-type': 'application/merge-patch+json', 'if-match': 'W/"5"' }, payload: {} })).statusCode, 400, 'reject is POST\'s alone')
})

t.test('OGC POST and dry runs', async (t) => {
  const x = 10 + lane++
  const theirs = await create(b.headers, 'b-ogc', box(x, 0, 0.01, 0.01))
  const item = feature('a-ogc', { coordinates: box(x + 0.005, 0, 0.01, 0.01) })
  const refused = expectError(t, await app.inject({ method: 'POST', url: '/collections/sources/items?on_conflict=acknowledge', headers: a.headers, payload: item }), 409, 'CONFLICT_KEYS_REQUIRED')
  t.equal(refused.conflict_keys?.[0]?.source_id, theirs)
  const dry = await app.inject({ method: 'POST', url: '/collections/sources/items?on_conflict=acknowledge&dry_run=true', headers: withKeys(a.headers, refused.conflict_keys ?? []), payload: item })
  t.equal(dry.statusCode, 200, dry.body)
  const res = await app.inject({ method: 'POST', url: '/collections/sources/items?on_conflict=acknowledge', headers: withKeys(a.headers, refused.conflict_keys ?? []), payload: item })
  t.equal(res.statusCode, 201, res.body)
})

t.test('CONFLICT_POLICY=acknowledge: the default for POST, PUT and PATCH; on_conflict=record overrides it', async (t) => {
  const strict = await build(t, { CONFLICT_POLICY: 'acknowledge' })
  const sa = await session(strict, 'editor', 'org-a')
  const sb = await session(strict, 'editor', 'org-b')
  const postTo = (headers: Headers, name: string, x: number, query = '') =>
    strict.app.inject({ method: 'POST', url: `/sources${query}`, headers, payload: collection(feature(name, { coordinates: box(x, 0, 0.01, 0.01) })) })
  t.equal((await postTo(sb.headers, 'b', 0)).statusCode, 201)
  const refused = expectError(t, await postTo(sa.headers, 'a', 0.005), 409, 'CONFLICT_KEYS_REQUIRED')
  t.equal((await postTo(withKeys(sa.headers, refused.conflict_keys ?? []), 'a', 0.005)).statusCode, 201)
  t.equal((await postTo(sa.headers, 'a-record', 0.006, '?on_conflict=record')).statusCode, 201, 'record overrides the policy')
  const far = await postTo(sa.headers, 'a-far', 5)
  t.equal(far.statusCode, 201)
  const patched = await strict.app.inject({
    method: 'PATCH', url: `/sources/?id=${far.json().id}`, headers: { ...sa.headers, 'content-type': 'application/merge-patch+json', 'if-match': 'W/"1"' },
    payload: { geometry: { type: 'Polygon', coordinates: box(0.004, 0, 0.01, 0.01) } }
  })
  expectError(t, patched, 409, 'CONFLICT_KEYS_REQUIRED')
})
