// Conflicts through the API: what POST /sources, GET /sources/?id= and the items say of two
// registrations claiming the same land for the same time; on_conflict=reject, CONFLICT_POLICY
// and dry_run=true; and that another organisation learns the conflicting id and nothing else.
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'kysely'
import { CreateResponseSchema, DryRunResponseSchema } from '../../src/sources/sources.schema.js'
import { SourceFeatureSchema } from '../../src/sources/source-feature.schema.js'
import { build, collection, expectError, feature, session } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const a = await session(ctx, 'editor', 'org-a')
const b = await session(ctx, 'editor', 'org-b')

// Each test works in its own degree of longitude, so their sources never meet.
let lane = 0
const box = (x: number, y: number, w: number, h: number): number[][][] => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]

async function post (headers: Record<string, string>, features: unknown[], query = '') {
  return await app.inject({ method: 'POST', url: `/sources${query}`, headers, payload: collection(...features) })
}
async function create (headers: Record<string, string>, features: unknown[], query = ''): Promise<Array<{ id: string, feature_id: string, conflicts: string[], conflicts_total?: number }>> {
  const res = await post(headers, features, query)
  t.equal(res.statusCode, 201, res.body)
  t.ok(Value.Check(CreateResponseSchema, res.json()), 'the 201 matches its schema')
  return res.json().sources
}
async function read (id: string, headers = a.headers) {
  const res = await app.inject({ method: 'GET', url: `/sources/?id=${id}`, headers })
  t.equal(res.statusCode, 200, res.body)
  t.ok(Value.Check(SourceFeatureSchema, res.json()), 'the Feature matches its schema')
  return { body: res.body, properties: res.json().properties }
}
const storedCount = async (): Promise<number> => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM sources`.execute(db)).rows[0]?.n)

t.test('another organisation\'s overlapping claim: 201, both see the conflict, and only its id', async (t) => {
  const x = 20 + lane++
  const [mine] = await create(a.headers, [feature('secret-field-name', { coordinates: box(x, 0, 0.01, 0.01) })])
  const [theirs] = await create(b.headers, [feature('b-1', { coordinates: box(x + 0.005, 0, 0.01, 0.01), start: '2024-06-01T00:00:00Z', end: '2025-06-01T00:00:00Z' })])
  t.same(theirs?.conflicts, [mine?.id], 'the 201 names the source it conflicts with')
  t.same(mine?.conflicts, [], 'the first had none when it was created')

  const seenByB = await read(theirs?.id as string, b.headers)
  t.equal(seenByB.properties.conflict, true)
  t.equal(seenByB.properties.conflicts.length, 1)
  const [entry] = seenByB.properties.conflicts
  t.same(Object.keys(entry).sort(), ['id', 'overlap_end', 'overlap_m2', 'overlap_ratio', 'overlap_start'])
  t.equal(entry.id, mine?.id)
  t.equal(entry.overlap_start, '2024-06-01T00:00:00Z')
  t.equal(entry.overlap_end, '2024-12-31T00:00:00Z')
  t.ok(Math.abs(entry.overlap_ratio - 0.5) < 1e-6, `half of it: ${entry.overlap_ratio}`)
  const area = Number((await sql<{ a: number }>`SELECT lonlat_area_m2(ST_MakeEnvelope(${x + 0.005}::float8, 0, ${x + 0.01}::float8, 0.01, 4326)) AS a`.execute(db)).rows[0]?.a)
  t.ok(Math.abs(entry.overlap_m2 - area) < 1e-6, `overlap ${entry.overlap_m2} m², the common box ${area}`)
  t.notMatch(seenByB.body, /secret-field-name|org-a/, 'nothing else of the other organisation\'s source')

  const seenByA = await read(mine?.id as string)
  t.equal(seenByA.properties.conflict, true, 'the first now has it too')
  t.equal(seenByA.properties.conflicts[0].id, theirs?.id)
  t.equal(seenByA.properties.conflicts[0].overlap_m2, entry.overlap_m2, 'symmetric')

  const gone = await app.inject({ method: 'DELETE', url: `/sources/?id=${theirs?.id as string}`, headers: b.headers })
  t.equal(gone.statusCode, 200)
  const after = await read(mine?.id as string)
  t.equal(after.properties.conflict, false, 'a deleted partner is gone at once')
  t.same(after.properties.conflicts, [])
})

t.test('edges that touch, periods that follow each other: no conflict', async (t) => {
  const x = 20 + lane++
  const [first] = await create(a.headers, [feature('t-1', { coordinates: box(x, 0, 0.01, 0.01), start: '2024-01-01', end: '2024-02-01' })])
  const [touching] = await create(b.headers, [feature('t-2', { coordinates: box(x + 0.01, 0, 0.01, 0.01), start: '2024-01-01', end: '2024-02-01' })])
  const [next] = await create(b.headers, [feature('t-3', { coordinates: box(x, 0, 0.01, 0.01), start: '2024-02-01', end: '2024-03-01' })])
  for (const s of [first, touching, next]) t.same(s?.conflicts, [])
  t.equal((await read(first?.id as string)).properties.conflict, false)
})

t.test('features of one request that overlap each other name each other', async (t) => {
  const x = 20 + lane++
  const created = await create(a.headers, [
    feature('r-1', { coordinates: box(x, 0, 0.01, 0.01) }),
    feature('r-2', { coordinates: box(x + 0.002, 0, 0.01, 0.01) }),
    feature('r-3', { coordinates: box(x + 0.5, 0, 0.01, 0.01) })
  ])
  t.same(created[0]?.conflicts, [created[1]?.id])
  t.same(created[1]?.conflicts, [created[0]?.id])
  t.same(created[2]?.conflicts, [])
})

t.test('conflicts are listed largest overlap first, 100 at most, with the total beyond', async (t) => {
  const x = 20 + lane++
  // 105 strips side by side, growing in width; one area over all of them.
  const strips = Array.from({ length: 105 }, (_, i) => feature(`s-${i}`, { coordinates: box(x + i * 0.004, 0, 0.001 + i * 0.00002, 0.01) }))
  const small = await create(a.headers, strips)
  const [big] = await create(b.headers, [feature('big', { coordinates: box(x - 0.001, -0.001, 0.5, 0.02) })])
  t.equal(big?.conflicts.length, 100)
  t.equal(big?.conflicts_total, 105)
  t.same(big?.conflicts.slice(0, 3), small.slice(-3).reverse().map((s) => s.id), 'the widest strips first')
  const { properties } = await read(big?.id as string, b.headers)
  t.equal(properties.conflicts.length, 100)
  t.equal(properties.conflicts_total, 105)
  const overlaps = properties.conflicts.map((c: { overlap_m2: number }) => c.overlap_m2)
  t.same(overlaps, [...overlaps].sort((p: number, q: number) => q - p), 'ordered by overlap_m2, descending')
  const one = await read(small[0]?.id as string)
  t.equal(one.properties.conflicts_total, undefined, 'no total when all are listed')
  t.equal(one.properties.conflicts[0].overlap_ratio, 1, 'a strip lies wholly in the big area')
  // The items are made by PostgreSQL, GET /sources/?id= by the service: the same Features.
  const bbox = `${x - 0.01},-0.01,${x + 0.6},0.03`
  for (const [headers, count] of [[b.headers, 1], [a.headers, 105]] as const) {
    const page = await app.inject({ method: 'GET', url: `/collections/sources/items?limit=200&bbox=${bbox}`, headers })
    t.equal(page.statusCode, 200, page.body)
    const features = page.json().features as Array<{ id: string }>
    t.equal(features.length, count, 'the big area for its organisation, the 105 strips for theirs')
    for (const f of features) t.same(f, JSON.parse((await read(f.id, headers)).body), `item ${f.id} is the Feature of GET /sources/?id=`)
  }
})

t.test('on_conflict=reject: 409 SOURCE_OVERLAP per feature, nothing stored; record overrides a reject policy', async (t) => {
  const x = 20 + lane++
  const [existing] = await create(a.headers, [feature('x-1', { coordinates: box(x, 0, 0.01, 0.01) })])
  const before = await storedCount()
  const res = await post(b.headers, [
    feature('y-ok', { coordinates: box(x + 0.5, 0, 0.01, 0.01) }),
    feature('y-1', { coordinates: box(x + 0.005, 0, 0.01, 0.01) }),
    feature('y-2', { coordinates: box(x + 0.5, 0, 0.01, 0.01) })
  ], '?on_conflict=reject')
  const body = expectError(t, res, 409, 'SOURCE_OVERLAP')
  t.same(body.details?.map((d) => d.pointer), ['/features/0/geometry', '/features/1/geometry', '/features/2/geometry'])
  t.same(body.details?.[1]?.conflicts?.map((c) => c.id), [existing?.id], 'the registered source, by id')
  t.same(body.details?.[0]?.conflicts?.map((c) => c.feature_index), [2], 'another feature of the request, by index')
  t.equal(body.details?.[1]?.feature_id, 'y-1')
  t.match(body.details?.[1]?.message ?? '', existing?.id as string)
  t.equal(await storedCount(), before, 'nothing stored')

  const clean = await post(b.headers, [feature('z-1', { coordinates: box(x + 0.7, 0, 0.01, 0.01) })], '?on_conflict=reject')
  t.equal(clean.statusCode, 201, 'without a conflict, reject stores as usual')

  // A deployment with CONFLICT_POLICY=reject (its own database).
  const strict = await build(t, { CONFLICT_POLICY: 'reject' })
  const strictA = await session(strict, 'editor', 'org-a')
  const strictB = await session(strict, 'editor', 'org-b')
  const postTo = async (headers: Record<string, string>, id: string, dx: number, query = '') =>
    await strict.app.inject({ method: 'POST', url: `/sources${query}`, headers, payload: collection(feature(id, { coordinates: box(x + dx, 0, 0.01, 0.01) })) })
  const first = await postTo(strictA.headers, 'v-1', 0)
  t.equal(first.statusCode, 201, 'nothing to conflict with yet')
  expectError(t, await postTo(strictB.headers, 'w-1', 0.005), 409, 'SOURCE_OVERLAP')
  const recorded = await postTo(strictB.headers, 'w-1', 0.005, '?on_conflict=record')
  t.equal(recorded.statusCode, 201, 'on_conflict=record overrides the policy')
  t.same(recorded.json().sources[0].conflicts, [first.json().id])
})

t.test('dry_run=true: 200 with what would be created and each conflict, nothing stored, same errors', async (t) => {
  const x = 20 + lane++
  const [existing] = await create(a.headers, [feature('d-1', { coordinates: box(x, 0, 0.01, 0.01) })])
  const before = await storedCount()
  const res = await post(b.headers, [
    feature('e-1', { coordinates: box(x + 0.005, 0, 0.01, 0.01) }),
    feature('e-2', { coordinates: box(x + 0.5, 0, 0.01, 0.01) })
  ], '?dry_run=true')
  t.equal(res.statusCode, 200, res.body)
  const body = res.json()
  t.ok(Value.Check(DryRunResponseSchema, body), 'matches its schema')
  t.equal(body.dry_run, true)
  t.same(body.sources.map((s: { feature_id: string }) => s.feature_id), ['e-1', 'e-2'])
  t.same(body.sources[0].conflicts.map((c: { id: string }) => c.id), [existing?.id])
  t.ok(body.sources[0].conflicts[0].overlap_m2 > 0)
  t.equal(body.sources[1].conflict, false)
  t.equal(await storedCount(), before, 'nothing stored')
  t.equal((await read(existing?.id as string)).properties.conflict, false, 'the registered source is not marked')

  const invalid = await post(b.headers, [feature('bow', { coordinates: [[[x, 0], [x + 1, 1], [x + 1, 0], [x, 1], [x, 0]]] })], '?dry_run=true')
  expectError(t, invalid, 422, 'INVALID_GEOMETRY')
  const duplicate = await post(a.headers, [feature('d-1', { coordinates: box(x + 0.8, 0, 0.01, 0.01) })], '?dry_run=true')
  expectError(t, duplicate, 409, 'SOURCE_CONFLICT')
  const rejecting = await post(b.headers, [feature('e-1', { coordinates: box(x + 0.005, 0, 0.01, 0.01) })], '?dry_run=true&on_conflict=reject')
  expectError(t, rejecting, 409, 'SOURCE_OVERLAP')
  const no = await post(b.headers, [feature('e-3', { coordinates: box(x + 0.9, 0, 0.01, 0.01) })], '?dry_run=false')
  t.equal(no.statusCode, 201, 'dry_run=false is a real POST')
  t.equal(await storedCount(), before + 1)
})

t.test('bad or unknown query parameters are 400s that name them (a typo must not store)', async (t) => {
  const x = 20 + lane++
  const before = await storedCount()
  for (const [query, pointer] of <Array<[string, string]>>[['?dryrun=true', '?dryrun'], ['?dry_run=yes', '?dry_run'], ['?on_conflict=ignore', '?on_conflict'], ['?dry_run=true&dry_run=true', '?dry_run']]) {
    const res = await post(a.headers, [feature('q-1', { coordinates: box(x, 0, 0.01, 0.01) })], query)
    const body = expectError(t, res, 400, 'VALIDATION_FAILED')
    t.equal(body.details?.[0]?.pointer, pointer, query)
  }
  t.equal(await storedCount(), before)
})

t.test('items: every feature carries its conflicts, and conflict=true|false filters', async (t) => {
  const x = 20 + lane++
  const [p] = await create(a.headers, [feature('i-1', { coordinates: box(x, 0, 0.01, 0.01) })])
  const [q] = await create(a.headers, [feature('i-2', { coordinates: box(x + 0.005, 0, 0.01, 0.01) })])
  const [alone] = await create(a.headers, [feature('i-3', { coordinates: box(x + 0.5, 0, 0.01, 0.01) })])
  const items = async (query: string) => {
    const res = await app.inject({ method: 'GET', url: `/collections/sources/items?bbox=${x - 0.1},-1,${x + 0.9},1${query}`, headers: a.headers })
    t.equal(res.statusCode, 200, res.body)
    return res.json().features as Array<{ id: string, properties: { conflict: boolean, conflicts: Array<{ id: string }> } }>
  }
  const all = await items('')
  t.same(all.map((f) => [f.id, f.properties.conflict]).sort(), [[p?.id, true], [q?.id, true], [alone?.id, false]].sort())
  const byId = new Map(all.map((f) => [f.id, f]))
  t.same(byId.get(p?.id as string)?.properties.conflicts.map((c) => c.id), [q?.id])
  t.same((await items('&conflict=true')).map((f) => f.id).sort(), [p?.id, q?.id].sort())
  t.same((await items('&conflict=false')).map((f) => f.id), [alone?.id])
  const bad = await app.inject({ method: 'GET', url: '/collections/sources/items?conflict=maybe', headers: a.headers })
  t.equal(expectError(t, bad, 400, 'VALIDATION_FAILED').details?.[0]?.pointer, '?conflict')
})
