// Conflicts as a resource (issue 47, points 1 and 2): GET /conflicts and /conflicts/{id} (ETag,
// filters, pages, the OGC items), what each organisation sees, every stance transition allowed
// and refused, the stance race, notes and history and who may read them, resolution by edit and
// delete, the source's encumbered/clear state, and the events of each.
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'kysely'
import { ConflictPageSchema, ConflictSchema } from '../../src/conflicts/conflicts.schema.js'
import { CloudEventSchema } from '../../src/events/events.schema.js'
import { build, collection, expectError, feature, session } from '../helper.js'

const ctx = await build(t)
const { app } = ctx
const a = await session(ctx, 'editor', 'org-a')
const a2 = await session(ctx, 'editor', 'org-a')
const aViewer = await session(ctx, 'viewer', 'org-a')
const b = await session(ctx, 'editor', 'org-b')
const c = await session(ctx, 'editor', 'org-c')
const admin = await session(ctx, 'admin', 'org-admin')

type Headers = Record<string, string>
let lane = 0
const box = (x: number, y: number, w: number, h: number): number[][][] => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]

async function create (headers: Headers, name: string, coordinates: number[][][], start = '2024-01-01T00:00:00Z', end = '2024-12-31T00:00:00Z'): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(feature(name, { coordinates, start, end })) })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().sources[0].id
}
async function list (headers: Headers, query = '') {
  const res = await app.inject({ method: 'GET', url: `/conflicts${query}`, headers })
  t.equal(res.statusCode, 200, res.body)
  t.ok(Value.Check(ConflictPageSchema, res.json()), 'the page matches its schema')
  return res.json()
}
async function getOne (headers: Headers, id: string) {
  return await app.inject({ method: 'GET', url: `/conflicts/${id}`, headers })
}
async function stance (headers: Headers, id: string, body: Record<string, unknown>, etag?: string) {
  return await app.inject({ method: 'POST', url: `/conflicts/${id}/stance`, headers: { ...headers, ...(etag !== undefined ? { 'if-match': etag } : {}) }, payload: body })
}
/** Two overlapping sources, a's and b's, and their conflict. */
async function pair (other = b) {
  const x = 40 + lane++
  const mine = await create(a.headers, `secret-a-name-${x}`, box(x, 10, 0.01, 0.01))
  const theirs = await create(other.headers, `secret-b-name-${x}`, box(x + 0.005, 10, 0.01, 0.01), '2024-06-01T00:00:00Z', '2025-06-01T00:00:00Z')
  const page = await list(a.headers, `?source_id=${mine}`)
  t.equal(page.features.length, 1, 'one conflict')
  return { x, mine, theirs, id: page.features[0].id as string }
}
async function sourceState (headers: Headers, id: string): Promise<string> {
  const res = await app.inject({ method: 'GET', url: `/sources/?id=${id}`, headers })
  return res.json().properties.conflict_state
}
async function eventsOf (headers: Headers, conflictId: string) {
  const res = await app.inject({ method: 'GET', url: '/events?limit=1000', headers })
  t.equal(res.statusCode, 200)
  const events = res.json().events.filter((e: { data: { conflict_id?: string } }) => e.data.conflict_id === conflictId)
  for (const e of events) t.ok(Value.Check(CloudEventSchema, e), `${e.type} matches the CloudEvent schema`)
  return events as Array<{ type: string, subject: string, data: Record<string, unknown> }>
}

t.test('a conflict as a resource: both parties see it, with the overlap and nothing else of the other', async (t) => {
  const { mine, theirs, id } = await pair()
  const res = await getOne(a.headers, id)
  t.equal(res.statusCode, 200, res.body)
  t.match(res.headers['content-type'], /^application\/geo\+json/)
  t.equal(res.headers.etag, 'W/"1"')
  const body = res.json()
  t.ok(Value.Check(ConflictSchema, body))
  t.equal(body.properties.state, 'open')
  t.same(body.properties.parties.map((p: { source_id: string }) => p.source_id), [mine, theirs].sort())
  t.same(body.properties.parties.find((p: { source_id: string }) => p.source_id === mine).own, true)
  t.same(body.properties.parties.find((p: { source_id: string }) => p.source_id === theirs).own, false)
  t.equal(body.geometry.type, 'Polygon', 'the overlap')
  t.equal(body.properties.overlap_start, '2024-06-01T00:00:00Z')
  t.equal(body.properties.overlap_end, '2024-12-31T00:00:00Z')
  t.ok(body.properties.overlap_m2 > 0)
  t.equal((await app.inject({ method: 'GET', url: `/conflicts/${id}`, headers: { ...a.headers, 'if-none-match': 'W/"1"' } })).statusCode, 304)

  const seenByB = await getOne(b.headers, id)
  t.equal(seenByB.statusCode, 200)
  t.notMatch(seenByB.body, /secret-a-name|org-a/, 'b sees nothing of a\'s source but its id and the overlap')
  t.notMatch(res.body, /secret-b-name|org-b/)
  t.same(seenByB.json().geometry, body.geometry, 'the same overlap for both')

  expectError(t, await getOne(c.headers, id), 404, 'NOT_FOUND')
  t.same((await list(c.headers)).features, [], 'a third organisation lists none')
  t.equal((await getOne(admin.headers, id)).statusCode, 200, 'an admin sees any')
  const item = await app.inject({ method: 'GET', url: `/collections/conflicts/items/${id}`, headers: b.headers })
  t.equal(item.body, seenByB.body, 'the OGC item is the same Feature')
  expectError(t, await app.inject({ method: 'GET', url: `/collections/conflicts/items/${id}`, headers: c.headers }), 404, 'NOT_FOUND')

  t.equal(await sourceState(a.headers, mine), 'encumbered')
  t.equal(await sourceState(b.headers, theirs), 'encumbered')
})

t.test('filters and pages', async (t) => {
  const one = await pair()
  const two = await pair()
  const both = await list(a.headers, `?source_id=${one.mine}`)
  t.equal(both.features[0].id, one.id)
  const inBox = await list(a.headers, `?bbox=${one.x + 0.004},10,${one.x + 0.02},10.02`)
  t.same(inBox.features.map((f: { id: string }) => f.id), [one.id], 'bbox meeting the overlap')
  t.same((await list(a.headers, `?bbox=${one.x},10,${one.x + 0.004},10.01`)).features, [], 'bbox beside the overlap: none')
  t.ok((await list(a.headers, `?datetime=2024-07-01T00:00:00Z&source_id=${two.mine}`)).features.length === 1, 'an instant in the overlap')
  t.same((await list(a.headers, `?datetime=2024-01-01T00:00:00Z/2024-05-01T00:00:00Z&source_id=${two.mine}`)).features, [], 'an interval before it')
  t.same((await list(a.headers, '?state=disputed')).features.filter((f: { id: string }) => f.id === one.id), [], 'state filter')
  t.ok((await list(a.headers, '?state=open')).features.some((f: { id: string }) => f.id === one.id))

  const first = await list(a.headers, '?limit=1')
  t.equal(first.numberReturned, 1)
  const next = first.links.find((l: { rel: string }) => l.rel === 'next')
  t.ok(next, 'a next link')
  const second = await list(a.headers, new URL(next.href).search)
  t.not(second.features[0].id, first.features[0].id)
  t.ok(second.features[0].id > first.features[0].id, 'id order')
  const items = await app.inject({ method: 'GET', url: '/collections/conflicts/items?limit=1', headers: a.headers })
  t.equal(items.json().features[0].id, first.features[0].id, 'the OGC items page is the same')
  t.match(items.json().links.find((l: { rel: string }) => l.rel === 'next').href, /\/collections\/conflicts\/items\?/)

  expectError(t, await app.inject({ method: 'GET', url: '/conflicts?bbox=1,2,3', headers: a.headers }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: '/conflicts?limit=0', headers: a.headers }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: '/conflicts?datetime=yesterday', headers: a.headers }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: '/conflicts?state=closed', headers: a.headers }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: '/conflicts' }), 401, 'UNAUTHORIZED')
})

t.test('every transition, allowed and refused, and the states they make', async (t) => {
  const { mine, theirs, id } = await pair()
  let version = 1
  const move = async (who: typeof a, to: string, expected: string, reason?: string) => {
    const res = await stance(who.headers, id, { stance: to, ...(reason !== undefined ? { reason } : {}) }, `W/"${version}"`)
    t.equal(res.statusCode, 200, `${to}: ${res.body}`)
    version++
    t.equal(res.headers.etag, `W/"${version}"`)
    t.ok(Value.Check(ConflictSchema, res.json()))
    t.equal(res.json().properties.state, expected, `state ${expected}`)
    return res.json()
  }
  const refuse = async (who: typeof a, to: string, allowed: string[]) => {
    const body = expectError(t, await stance(who.headers, id, { stance: to, reason: 'r' }, `W/"${version}"`), 409, 'STANCE_NOT_ALLOWED')
    t.same(body.allowed, allowed, `to ${to}: allowed ${allowed.join(', ')}`)
  }
  await refuse(a, 'disputed', ['acknowledged'])
  await refuse(a, 'accepted', ['acknowledged'])
  await move(a, 'acknowledged', 'in_review')
  await refuse(a, 'acknowledged', ['accepted', 'disputed'])
  expectError(t, await stance(a.headers, id, { stance: 'disputed' }, `W/"${version}"`), 400, 'VALIDATION_FAILED')
  const disputed = await move(a, 'disputed', 'disputed', 'our grazing right predates this')
  t.equal(disputed.properties.parties.find((p: { source_id: string }) => p.source_id === mine).reason, 'our grazing right predates this')
  await refuse(a, 'disputed', ['accepted', 'acknowledged'])
  await move(a, 'acknowledged', 'in_review')
  await move(a, 'accepted', 'in_review')
  await refuse(a, 'accepted', ['acknowledged', 'disputed'])
  await move(a, 'disputed', 'disputed', 'changed our mind')
  await move(a, 'accepted', 'in_review')
  await move(b, 'acknowledged', 'in_review')
  await move(b, 'accepted', 'accepted')
  t.equal(await sourceState(a.headers, mine), 'clear', 'both accept: the source is clear')
  t.equal(await sourceState(b.headers, theirs), 'clear')
  await move(a, 'acknowledged', 'in_review')
  t.equal(await sourceState(a.headers, mine), 'encumbered', 'and encumbered again when one withdraws')

  const seen = (await getOne(b.headers, id)).json()
  t.equal(seen.properties.parties.find((p: { source_id: string }) => p.source_id === mine).stance, 'acknowledged', 'the other party\'s stance is visible')

  const history = await app.inject({ method: 'GET', url: `/conflicts/${id}/history`, headers: b.headers })
  t.equal(history.statusCode, 200, history.body)
  const stances = history.json().stances
  t.equal(stances.length, version - 1, 'one entry per change')
  t.same(stances.slice(0, 2).map((s: { from: string, to: string }) => [s.from, s.to]), [['open', 'acknowledged'], ['acknowledged', 'disputed']])
  t.notOk(stances[0].recorded_by, 'b does not learn who at a changed it')
  t.ok(stances.find((s: { source_id: string }) => s.source_id === theirs).recorded_by, 'but its own')
  expectError(t, await app.inject({ method: 'GET', url: `/conflicts/${id}/history`, headers: c.headers }), 404, 'NOT_FOUND')

  const events = await eventsOf(a.headers, id)
  const changes = events.filter((e) => e.type === 'conflict.stance_changed')
  t.equal(changes.length, version - 1, 'a hears of every change, its own and b\'s')
  t.ok(changes.every((e) => e.subject === mine && e.data.source_id === mine && e.data.other_id === theirs))
  t.same(changes[1]?.data.to, 'disputed')
  t.equal((await eventsOf(b.headers, id)).filter((e) => e.type === 'conflict.stance_changed').length, version - 1, 'and b too')
  t.same(await eventsOf(c.headers, id), [], 'c hears nothing')
})

t.test('who may set a stance', async (t) => {
  const { mine, theirs, id } = await pair()
  expectError(t, await stance(a.headers, id, { stance: 'acknowledged' }), 428, 'PRECONDITION_REQUIRED')
  expectError(t, await stance(a.headers, id, { stance: 'acknowledged' }, 'W/"9"'), 412, 'PRECONDITION_FAILED')
  expectError(t, await stance(aViewer.headers, id, { stance: 'acknowledged' }, 'W/"1"'), 403, 'FORBIDDEN')
  expectError(t, await stance(b.headers, id, { stance: 'acknowledged', source_id: mine }, 'W/"1"'), 403, 'FORBIDDEN')
  expectError(t, await stance(c.headers, id, { stance: 'acknowledged' }, 'W/"1"'), 404, 'NOT_FOUND')
  expectError(t, await stance(admin.headers, id, { stance: 'acknowledged' }, 'W/"1"'), 400, 'VALIDATION_FAILED')
  expectError(t, await stance(a.headers, id, { stance: 'acknowledged', source_id: 'src_0000000000000000000000' }, 'W/"1"'), 400, 'VALIDATION_FAILED')
  const byAdmin = await stance(admin.headers, id, { stance: 'acknowledged', source_id: theirs }, 'W/"1"')
  t.equal(byAdmin.statusCode, 200, byAdmin.body)
  t.equal(byAdmin.json().properties.parties.find((p: { source_id: string }) => p.source_id === theirs).stance, 'acknowledged')
  const own = await stance(a.headers, id, { stance: 'acknowledged', source_id: mine }, '*')
  t.equal(own.statusCode, 200, 'If-Match: * and the own source named')
})

t.test('the stance race: two editors, one If-Match, one 412', async (t) => {
  const { id } = await pair()
  const [one, two] = await Promise.all([
    stance(a.headers, id, { stance: 'acknowledged' }, 'W/"1"'),
    stance(a2.headers, id, { stance: 'acknowledged' }, 'W/"1"')
  ])
  t.same([one?.statusCode, two?.statusCode].sort(), [200, 412], `${one?.body} / ${two?.body}`)
  const loser = [one, two].find((r) => r?.statusCode === 412)
  if (loser !== undefined) expectError(t, loser, 412, 'PRECONDITION_FAILED')
  t.equal((await getOne(a.headers, id)).headers.etag, 'W/"2"', 'one change')
})

t.test('notes: both parties and admins, no one else', async (t) => {
  const { id, mine } = await pair()
  const posted = await app.inject({ method: 'POST', url: `/conflicts/${id}/notes`, headers: a.headers, payload: { body: 'Call us about the fence line.' } })
  t.equal(posted.statusCode, 201, posted.body)
  t.equal(posted.json().own, true)
  t.equal(posted.json().author, a.account.email)
  const reply = await app.inject({ method: 'POST', url: `/conflicts/${id}/notes`, headers: b.headers, payload: { body: 'Will do.' } })
  t.equal(reply.statusCode, 201)
  const seenByB = await app.inject({ method: 'GET', url: `/conflicts/${id}/notes`, headers: b.headers })
  t.equal(seenByB.statusCode, 200)
  t.same(seenByB.json().notes.map((n: { body: string, own: boolean }) => [n.body, n.own]), [['Call us about the fence line.', false], ['Will do.', true]])
  t.notOk(seenByB.json().notes[0].author, 'the other organisation\'s author is not shown')
  t.notMatch(seenByB.body, /org-a/)
  const seenByAdmin = await app.inject({ method: 'GET', url: `/conflicts/${id}/notes`, headers: admin.headers })
  t.ok(seenByAdmin.json().notes.every((n: { author?: string }) => n.author !== undefined), 'admins see every author')
  expectError(t, await app.inject({ method: 'GET', url: `/conflicts/${id}/notes`, headers: c.headers }), 404, 'NOT_FOUND')
  expectError(t, await app.inject({ method: 'POST', url: `/conflicts/${id}/notes`, headers: c.headers, payload: { body: 'hello' } }), 404, 'NOT_FOUND')
  expectError(t, await app.inject({ method: 'POST', url: `/conflicts/${id}/notes`, headers: a.headers, payload: { body: '   ' } }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'POST', url: `/conflicts/${id}/notes`, headers: aViewer.headers, payload: { body: 'x' } }), 403, 'FORBIDDEN')
  const notes = (await eventsOf(b.headers, id)).filter((e) => e.type === 'conflict.note_added')
  t.same(notes.map((e) => [e.data.body, e.data.own]), [['Call us about the fence line.', false], ['Will do.', true]])
  t.ok((await eventsOf(a.headers, id)).filter((e) => e.type === 'conflict.note_added').every((e) => e.subject === mine))
  t.same(await eventsOf(c.headers, id), [])
})

t.test('resolved when the overlap disappears: by an edit, by a delete', async (t) => {
  const edited = await pair()
  const put = await app.inject({
    method: 'PUT', url: `/sources/?id=${edited.theirs}`, headers: { ...b.headers, 'if-match': 'W/"1"' },
    payload: feature(`secret-b-name-${edited.x}`, { coordinates: box(edited.x + 0.02, 10, 0.01, 0.01), start: '2024-06-01T00:00:00Z', end: '2025-06-01T00:00:00Z' })
  })
  t.equal(put.statusCode, 200, put.body)
  t.equal(put.json().properties.conflict_state, 'clear')
  const res = await getOne(a.headers, edited.id)
  t.equal(res.json().properties.state, 'resolved')
  t.equal(res.json().properties.resolution, 'edited')
  t.equal(res.json().geometry, null)
  t.ok(res.json().properties.resolved_at)
  t.equal(await sourceState(a.headers, edited.mine), 'clear')
  t.notOk((await list(a.headers)).features.some((f: { id: string }) => f.id === edited.id), 'not listed by default')
  t.ok((await list(a.headers, '?state=resolved')).features.some((f: { id: string }) => f.id === edited.id), 'listed with state=resolved')
  t.ok((await list(a.headers, '?state=all')).features.some((f: { id: string }) => f.id === edited.id), 'and with state=all')
  const body = expectError(t, await stance(a.headers, edited.id, { stance: 'acknowledged' }, res.headers.etag as string), 409, 'STANCE_NOT_ALLOWED')
  t.same(body.allowed, [], 'nothing is allowed once resolved')
  const resolvedEvents = (await eventsOf(a.headers, edited.id)).filter((e) => e.type === 'conflict.resolved')
  t.equal(resolvedEvents.length, 1)
  t.equal(resolvedEvents[0]?.data.resolution, 'edited')

  const deleted = await pair()
  t.equal((await app.inject({ method: 'DELETE', url: `/sources/?id=${deleted.mine}`, headers: a.headers })).statusCode, 200)
  const gone = await getOne(b.headers, deleted.id)
  t.equal(gone.json().properties.resolution, 'deleted')
  t.equal(await sourceState(b.headers, deleted.theirs), 'clear')
  t.equal((await eventsOf(b.headers, deleted.id)).filter((e) => e.type === 'conflict.resolved').length, 1)

  const moved = await pair()
  const patch = await app.inject({
    method: 'PATCH', url: `/sources/?id=${moved.theirs}`, headers: { ...b.headers, 'if-match': 'W/"1"', 'content-type': 'application/merge-patch+json' },
    payload: { geometry: { type: 'Polygon', coordinates: box(moved.x + 0.003, 10, 0.01, 0.01) } }
  })
  t.equal(patch.statusCode, 200, patch.body)
  const still = (await getOne(a.headers, moved.id)).json()
  t.equal(still.properties.state, 'open', 'an edit that keeps an overlap keeps the conflict')
  t.equal(still.properties.version, 2, 'as a new version (the overlap changed)')
})

t.test('the source\'s state is filterable', async (t) => {
  const { mine } = await pair()
  const free = await create(a.headers, 'free', box(80 + lane++, 10, 0.01, 0.01))
  const q = (filter: string) => app.inject({ method: 'GET', url: `/collections/sources/items?limit=1000&filter=${encodeURIComponent(filter)}`, headers: a.headers })
  const encumbered = (await q("conflict_state = 'encumbered'")).json().features.map((f: { id: string }) => f.id)
  t.ok(encumbered.includes(mine))
  t.notOk(encumbered.includes(free))
  const clear = (await q("conflict_state = 'clear'")).json().features.map((f: { id: string }) => f.id)
  t.ok(clear.includes(free))
  t.notOk(clear.includes(mine))
})

t.test('a change of the tolerance resolves the pairs it ends as recomputed (last: it recomputes every pair)', async (t) => {
  const { id } = await pair()
  await sql`SELECT sources_set_conflict_tolerance(1000)`.execute(ctx.db)
  const res = (await getOne(a.headers, id)).json()
  t.equal(res.properties.state, 'resolved')
  t.equal(res.properties.resolution, 'recomputed')
  await sql`SELECT sources_set_conflict_tolerance(9)`.execute(ctx.db)
  const again = await list(a.headers)
  t.ok(again.features.length > 0, 'the pairs come back as new conflicts')
  t.notOk(again.features.some((f: { id: string }) => f.id === id), 'not the resolved one')
})
