// Carve-outs (issue 47, point 3): a source gives up the land of its conflicts, as a new version:
// a hole, a multipart result, nothing left (422), a dry run, the preconditions, who may, and the
// conflict resolved as carved with its event.
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { SourceFeatureSchema } from '../../src/sources/source-feature.schema.js'
import { CarveDryRunSchema } from '../../src/conflicts/conflicts.schema.js'
import { build, collection, expectError, feature, session } from '../helper.js'

const ctx = await build(t)
const { app } = ctx
const a = await session(ctx, 'editor', 'org-a')
const b = await session(ctx, 'editor', 'org-b')
const c = await session(ctx, 'editor', 'org-c')

type Headers = Record<string, string>
let lane = 0
const box = (x: number, y: number, w: number, h: number): number[][][] => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]

async function create (headers: Headers, coordinates: number[][][]): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection(feature(`f-${lane}-${Math.random()}`, { coordinates })) })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().sources[0].id
}
async function conflictOf (id: string, headers = a.headers): Promise<string[]> {
  const res = await app.inject({ method: 'GET', url: `/conflicts?source_id=${id}`, headers })
  return res.json().features.map((f: { id: string }) => f.id)
}
async function carve (headers: Headers, id: string, conflicts: string[] | 'all', etag?: string, query = '') {
  return await app.inject({ method: 'POST', url: `/sources/carve?id=${id}${query}`, headers: { ...headers, ...(etag !== undefined ? { 'if-match': etag } : {}) }, payload: { conflicts } })
}

t.test('a hole: the other source lies inside', async (t) => {
  const x = 60 + lane++
  const mine = await create(a.headers, box(x, 20, 0.1, 0.1))
  const theirs = await create(b.headers, box(x + 0.04, 20.04, 0.02, 0.02))
  const [conflict] = await conflictOf(mine)

  const dry = await carve(a.headers, mine, [conflict as string], undefined, '&dry_run=true')
  t.equal(dry.statusCode, 200, dry.body)
  t.ok(Value.Check(CarveDryRunSchema, dry.json()), 'the dry run matches its schema')
  t.equal(dry.json().geometry.type, 'Polygon')
  t.equal(dry.json().geometry.coordinates.length, 2, 'an exterior ring and a hole')
  t.same(dry.json().properties.conflicts, [conflict])
  const theirArea = (await app.inject({ method: 'GET', url: `/sources/?id=${theirs}`, headers: b.headers })).json().properties.area_m2
  t.ok(Math.abs(dry.json().properties.area_lost_m2 - theirArea) < 1, `area lost ${dry.json().properties.area_lost_m2} ≈ ${theirArea}`)
  t.equal((await app.inject({ method: 'GET', url: `/sources/?id=${mine}`, headers: a.headers })).headers.etag, 'W/"1"', 'the dry run stored nothing')

  expectError(t, await carve(a.headers, mine, [conflict as string]), 428, 'PRECONDITION_REQUIRED')
  expectError(t, await carve(a.headers, mine, [conflict as string], 'W/"5"'), 412, 'PRECONDITION_FAILED')
  expectError(t, await carve(b.headers, mine, [conflict as string], 'W/"1"'), 404, 'NOT_FOUND')
  expectError(t, await carve(c.headers, mine, 'all', 'W/"1"'), 404, 'NOT_FOUND')
  expectError(t, await carve(a.headers, mine, ['cfl_00000000000000000000000000000000'], 'W/"1"'), 422, 'NOTHING_TO_CARVE')
  // One of the ids named is not a conflict of the source: nothing is carved, not even the other.
  const partly = await carve(a.headers, mine, [conflict as string, 'cfl_00000000000000000000000000000000'], 'W/"1"')
  expectError(t, partly, 422, 'NOTHING_TO_CARVE')
  t.match(partly.json().details, [{ pointer: '/conflicts/1' }], 'the id that is not a conflict of the source is named')
  t.equal((await app.inject({ method: 'GET', url: `/sources/?id=${mine}`, headers: a.headers })).headers.etag, 'W/"1"', 'nothing was carved')

  const res = await carve(a.headers, mine, [conflict as string], 'W/"1"')
  t.equal(res.statusCode, 200, res.body)
  t.ok(Value.Check(SourceFeatureSchema, res.json()))
  t.equal(res.headers.etag, 'W/"2"', 'a new version')
  t.same(res.json().geometry, dry.json().geometry, 'what the dry run proposed')
  t.equal(res.json().properties.conflict, false)
  t.equal(res.json().properties.conflict_state, 'clear')
  const resolved = (await app.inject({ method: 'GET', url: `/conflicts/${conflict}`, headers: b.headers })).json()
  t.equal(resolved.properties.state, 'resolved')
  t.equal(resolved.properties.resolution, 'carved')
  const events = (await app.inject({ method: 'GET', url: '/events?limit=1000', headers: b.headers })).json().events
  t.ok(events.some((e: { type: string, data: { conflict_id?: string, resolution?: string } }) => e.type === 'conflict.resolved' && e.data.conflict_id === conflict && e.data.resolution === 'carved'), 'b hears it was carved')
  expectError(t, await carve(a.headers, mine, 'all', 'W/"2"'), 422, 'NOTHING_TO_CARVE')
})

t.test('a multipart result: a strip across the middle, on the OGC path', async (t) => {
  const x = 60 + lane++
  const mine = await create(a.headers, box(x, 20, 0.1, 0.1))
  await create(b.headers, box(x + 0.04, 19.9, 0.02, 0.3))
  await create(c.headers, box(x + 0.09, 20.09, 0.05, 0.05))
  const conflicts = await conflictOf(mine)
  t.equal(conflicts.length, 2)
  const res = await app.inject({ method: 'POST', url: `/collections/sources/items/${mine}/carve`, headers: { ...a.headers, 'if-match': 'W/"1"' }, payload: { conflicts: 'all' } })
  t.equal(res.statusCode, 200, res.body)
  t.equal(res.json().geometry.type, 'MultiPolygon')
  t.equal(res.json().geometry.coordinates.length, 2, 'two parts')
  t.same(await conflictOf(mine), [], 'no conflict left')
})

t.test('nothing left: 422, nothing stored', async (t) => {
  const x = 60 + lane++
  const mine = await create(a.headers, box(x + 0.04, 20.04, 0.02, 0.02))
  await create(b.headers, box(x, 20, 0.1, 0.1))
  expectError(t, await carve(a.headers, mine, 'all', 'W/"1"'), 422, 'NOTHING_LEFT')
  expectError(t, await carve(a.headers, mine, 'all', undefined, '&dry_run=true'), 422, 'NOTHING_LEFT')
  t.equal((await conflictOf(mine)).length, 1, 'the conflict stays')
})

t.test('slivers along the cut are dropped', async (t) => {
  const x = 60 + lane++
  // The other source covers all but a 5 m strip at the east edge: narrower than the 9 m tolerance.
  const mine = await create(a.headers, box(x, 20, 0.01, 0.01))
  await create(b.headers, box(x - 0.01, 19.99, 0.01 + 0.01 - 0.00005, 0.03))
  expectError(t, await carve(a.headers, mine, 'all', 'W/"1"'), 422, 'NOTHING_LEFT')
})
