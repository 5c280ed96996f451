// Watched areas (issue 47, point 5): POST, GET, DELETE /watches; watch.matched when any
// organisation's source starts to overlap a watched area (created into it, or changed into it),
// with the overlap in m² and the overlapping period and nothing else of the source; no event for
// a source outside the area or the period, or that fails the filter; the size limit; and another
// organisation sees nothing of a watch (404).
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Value } from '@sinclair/typebox/value'
import { sql } from 'kysely'
import { CloudEventSchema } from '../../src/events/events.schema.js'
import { WatchListSchema, WatchSchema } from '../../src/watches/watches.schema.js'
import { inlineParameters } from '../../src/watches/watch-filter.js'
import { build, collection, expectError, feature, session } from '../helper.js'

// Webhooks to a receiver on loopback (as in development).
const ctx = await build(t, { WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_RETRY_BASE_MS: 50 })
const { app } = ctx
const a = await session(ctx, 'editor', 'org-a')
const aViewer = await session(ctx, 'viewer', 'org-a')
const b = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'org-admin')

type Headers = Record<string, string>
let lane = 0
const box = (x: number, y: number, w: number, h: number): number[][][] => [[[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]]]

async function watch (headers: Headers, body: Record<string, unknown>) {
  return await app.inject({ method: 'POST', url: '/watches', headers, payload: body })
}
async function watchOf (headers: Headers, x: number, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await watch(headers, { geometry: { type: 'Polygon', coordinates: box(x, 0, 0.1, 0.1) }, start_at: '2024-03-01T00:00:00Z', end_at: '2024-09-01T00:00:00Z', ...extra })
  t.equal(res.statusCode, 201, res.body)
  t.ok(Value.Check(WatchSchema, res.json()), 'the watch matches its schema')
  return res.json().id
}
async function create (headers: Headers, name: string, coordinates: number[][][], properties: Record<string, unknown> = {}, start = '2024-01-01T00:00:00Z', end = '2024-12-31T00:00:00Z'): Promise<string> {
  const f = feature(name, { coordinates, start, end })
  const res = await app.inject({ method: 'POST', url: '/sources', headers, payload: collection({ ...f, properties: { ...f.properties, ...properties } }) })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().id
}
async function matched (headers: Headers, watchId?: string) {
  const res = await app.inject({ method: 'GET', url: '/events?limit=1000', headers })
  t.equal(res.statusCode, 200, res.body)
  const events = res.json().events.filter((e: { type: string, data: { watch_id?: string } }) => e.type === 'watch.matched' && (watchId === undefined || e.data.watch_id === watchId))
  for (const e of events) t.ok(Value.Check(CloudEventSchema, e), 'watch.matched matches the CloudEvent schema')
  return events as Array<{ type: string, subject: string, data: Record<string, unknown> }>
}

t.test('a watch: made, read, listed by its organisation; 404 to another', async (t) => {
  const x = 20 + lane++
  const res = await watch(a.headers, { geometry: { type: 'MultiPolygon', coordinates: [box(x, 0, 0.1, 0.1), box(x + 0.2, 0, 0.1, 0.1)] }, start_at: '2024-01-01', end_at: '2025-01-01T00:00:00+01:00' })
  t.equal(res.statusCode, 201, res.body)
  const w = res.json()
  t.match(w.id, /^wat_[0-9a-f]{32}$/)
  t.equal(res.headers.location, `/watches/${w.id}`)
  t.equal(w.geometry.type, 'MultiPolygon')
  t.equal(w.start_at, '2024-01-01T00:00:00Z')
  t.equal(w.end_at, '2024-12-31T23:00:00Z')
  t.ok(w.area_m2 > 2 * 1.2e8 && w.area_m2 < 2 * 1.25e8, `two squares of 0.1° at the equator: ${w.area_m2}`)
  const one = await app.inject({ method: 'GET', url: `/watches/${w.id}`, headers: aViewer.headers })
  t.equal(one.statusCode, 200, 'a viewer of the organisation reads it')
  t.same(one.json(), w)
  const list = await app.inject({ method: 'GET', url: '/watches', headers: a.headers })
  t.ok(Value.Check(WatchListSchema, list.json()))
  t.ok(list.json().watches.some((v: { id: string }) => v.id === w.id))
  expectError(t, await app.inject({ method: 'GET', url: `/watches/${w.id}`, headers: b.headers }), 404, 'NOT_FOUND')
  expectError(t, await app.inject({ method: 'DELETE', url: `/watches/${w.id}`, headers: b.headers }), 404, 'NOT_FOUND')
  t.notOk((await app.inject({ method: 'GET', url: '/watches', headers: b.headers })).json().watches.some((v: { id: string }) => v.id === w.id), 'not in another organisation\'s list')
  t.equal((await app.inject({ method: 'GET', url: `/watches/${w.id}`, headers: admin.headers })).statusCode, 200, 'admins see every watch')
  expectError(t, await watch(aViewer.headers, { geometry: { type: 'Polygon', coordinates: box(x, 0, 0.1, 0.1) }, start_at: '2024-01-01', end_at: '2025-01-01' }), 403, 'FORBIDDEN')
  // Pages.
  await watchOf(a.headers, x + 0.5)
  const first = await app.inject({ method: 'GET', url: '/watches?limit=1', headers: a.headers })
  const next = first.json().links.find((l: { rel: string }) => l.rel === 'next')
  t.ok(next, 'a next link')
  const second = await app.inject({ method: 'GET', url: new URL(next.href).pathname + new URL(next.href).search, headers: a.headers })
  t.not(second.json().watches[0].id, first.json().watches[0].id)
  // Deleted: gone.
  const del = await app.inject({ method: 'DELETE', url: `/watches/${w.id}`, headers: a.headers })
  t.equal(del.statusCode, 200, del.body)
  expectError(t, await app.inject({ method: 'GET', url: `/watches/${w.id}`, headers: a.headers }), 404, 'NOT_FOUND')
})

t.test('bad input: 400 and 422 with pointers; larger than WATCH_MAX_AREA_KM2: 422 naming the limit', async (t) => {
  const x = 20 + lane++
  const huge = expectError(t, await watch(a.headers, { geometry: { type: 'Polygon', coordinates: box(x, 0, 1, 1) }, start_at: '2024-01-01', end_at: '2025-01-01' }), 422, 'WATCH_TOO_LARGE')
  t.match(huge.message, /10,000 km²/)
  t.equal(huge.details?.[0]?.pointer, '/geometry')
  expectError(t, await watch(a.headers, { geometry: { type: 'Polygon', coordinates: box(x, 0, 0.1, 0.1) }, start_at: '2025-01-01', end_at: '2024-01-01' }), 422, 'INVALID_PERIOD')
  expectError(t, await watch(a.headers, { geometry: { type: 'Polygon', coordinates: box(x, 0, 0.1, 0.1) }, start_at: 'soon', end_at: '2024-01-01' }), 400, 'VALIDATION_FAILED')
  expectError(t, await watch(a.headers, { geometry: { type: 'Polygon', coordinates: [[[x, 0], [x + 1, 1], [x + 1, 0], [x, 1], [x, 0]]] }, start_at: '2024-01-01', end_at: '2025-01-01' }), 422, 'INVALID_GEOMETRY')
  expectError(t, await watch(a.headers, { geometry: { type: 'Polygon', coordinates: [[[x, 0], [x + 1, 0], [x + 1, 1], [x, 1]]] }, start_at: '2024-01-01', end_at: '2025-01-01' }), 400, 'INVALID_GEOJSON')
  expectError(t, await watch(a.headers, { geometry: { type: 'LineString', coordinates: [[x, 0], [x, 1]] }, start_at: '2024-01-01', end_at: '2025-01-01' }), 400, 'VALIDATION_FAILED')
  const badFilter = expectError(t, await watch(a.headers, { geometry: { type: 'Polygon', coordinates: box(x, 0, 0.1, 0.1) }, start_at: '2024-01-01', end_at: '2025-01-01', filter: 'colour ==' }), 400, 'VALIDATION_FAILED')
  t.equal(badFilter.details?.[0]?.pointer, '/filter')
  expectError(t, await watch(a.headers, { geometry: { type: 'Polygon', coordinates: box(x, 0, 0.1, 0.1) }, start_at: '2024-01-01', end_at: '2025-01-01', filter: 'no_such_property = 1' }), 400, 'VALIDATION_FAILED')
  // A smaller limit elsewhere.
  const small = await build(t, { WATCH_MAX_AREA_KM2: 50 })
  const sa = await session(small, 'editor', 'org-a')
  const refused = await small.app.inject({ method: 'POST', url: '/watches', headers: sa.headers, payload: { geometry: { type: 'Polygon', coordinates: box(0, 0, 0.1, 0.1) }, start_at: '2024-01-01', end_at: '2025-01-01' } })
  t.match(expectError(t, refused, 422, 'WATCH_TOO_LARGE').message, /at most 50 km²/)
})

t.test('a source that starts to overlap: one watch.matched to the watching organisation, with the overlap and nothing else', async (t) => {
  const x = 20 + lane++
  const id = await watchOf(a.headers, x)
  const theirs = await create(b.headers, 'secret-name', box(x + 0.09, 0.09, 0.02, 0.02), { owner: 'secret-owner' })
  const events = await matched(a.headers, id)
  t.equal(events.length, 1, 'one event')
  const e = events[0] as { subject: string, data: Record<string, unknown> }
  t.equal(e.subject, theirs)
  t.same(Object.keys(e.data).sort(), ['end_at', 'overlap_m2', 'source_id', 'start_at', 'watch_id'], 'ids, the overlap and the period: no geometry, no attributes')
  t.equal(e.data.source_id, theirs)
  t.equal(e.data.start_at, '2024-03-01T00:00:00Z', 'the overlap of the periods')
  t.equal(e.data.end_at, '2024-09-01T00:00:00Z')
  const expected = (await sql<{ m2: number }>`SELECT lonlat_area_m2(ST_Intersection(s.geom, w.geom)) AS m2 FROM sources AS s, watches AS w WHERE s.id = ${theirs} AND w.id = ${id}`.execute(ctx.db)).rows[0]?.m2 as number
  t.ok(Math.abs((e.data.overlap_m2 as number) - expected) < 1e-6 * expected, `the ellipsoidal overlap: ${String(e.data.overlap_m2)} ≈ ${expected}`)
  t.ok(expected > 1.2e6 && expected < 1.3e6, `a 0.01° square at the equator: ${expected}`)
  t.notMatch(JSON.stringify(events), /secret-/, 'nothing of its attributes or feature id')
  t.same(await matched(b.headers), [], 'the source\'s owner is not told of another\'s watch')
  // An edit that keeps it overlapping is no new start.
  const patched = await app.inject({ method: 'PATCH', url: `/sources/?id=${theirs}`, headers: { ...b.headers, 'content-type': 'application/merge-patch+json', 'if-match': 'W/"1"' }, payload: { properties: { more: 1 } } })
  t.equal(patched.statusCode, 200, patched.body)
  t.equal((await matched(a.headers, id)).length, 1, 'still one')
})

t.test('no match: outside the area, outside the period, touching only; an edit into the area matches', async (t) => {
  const x = 20 + lane++
  const id = await watchOf(a.headers, x)
  await create(b.headers, 'far', box(x + 0.5, 0, 0.01, 0.01))
  await create(b.headers, 'later', box(x + 0.05, 0.05, 0.01, 0.01), {}, '2024-09-01T00:00:00Z', '2024-12-01T00:00:00Z')
  await create(b.headers, 'touching', box(x + 0.1, 0, 0.01, 0.01))
  t.same(await matched(a.headers, id), [], 'no event')
  const moving = await create(b.headers, 'moving', box(x + 0.3, 0, 0.01, 0.01))
  const moved = await app.inject({
    method: 'PATCH', url: `/collections/sources/items/${moving}`, headers: { ...b.headers, 'content-type': 'application/merge-patch+json', 'if-match': 'W/"1"' },
    payload: { geometry: { type: 'Polygon', coordinates: box(x + 0.02, 0.02, 0.01, 0.01) } }
  })
  t.equal(moved.statusCode, 200, moved.body)
  const events = await matched(a.headers, id)
  t.same(events.map((e) => e.subject), [moving], 'moved into the area: matched')
  // Deleted watch: no more events.
  t.equal((await app.inject({ method: 'DELETE', url: `/watches/${id}`, headers: a.headers })).statusCode, 200)
  await create(b.headers, 'after', box(x + 0.04, 0.04, 0.01, 0.01))
  t.equal((await matched(a.headers, id)).length, 1, 'nothing after the watch is deleted')
})

t.test('a filter: only matching sources are told (text and JSON)', async (t) => {
  const x = 20 + lane++
  const text = await watchOf(a.headers, x, { filter: "properties.crop = 'wheat' AND area_m2 > 1000" })
  const json = await watchOf(a.headers, x, { filter: { op: '=', args: [{ property: 'properties.crop' }, 'rice'] } })
  const stored = (await app.inject({ method: 'GET', url: `/watches/${json}`, headers: a.headers })).json()
  t.equal(stored.filter_lang, 'cql2-json')
  const wheat = await create(b.headers, 'wheat', box(x + 0.01, 0.01, 0.01, 0.01), { crop: 'wheat' })
  const rice = await create(b.headers, 'rice', box(x + 0.03, 0.03, 0.01, 0.01), { crop: 'rice' })
  await create(b.headers, 'none', box(x + 0.05, 0.05, 0.01, 0.01))
  t.same((await matched(a.headers, text)).map((e) => e.subject), [wheat])
  t.same((await matched(a.headers, json)).map((e) => e.subject), [rice])
  // A literal with quotes and a dollar: written into the SQL as a literal, not as SQL.
  const odd = await watchOf(a.headers, x + 0.5, { filter: "properties.name = 'it''s $1 \\ (x)'" })
  const oddSource = await create(b.headers, 'odd', box(x + 0.51, 0.01, 0.01, 0.01), { name: 'it\'s $1 \\ (x)' })
  t.same((await matched(a.headers, odd)).map((e) => e.subject), [oddSource])
})

t.test('a webhook subscribed to watch.matched receives it', async (t) => {
  const received: string[] = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => { body += c })
    req.on('end', () => { received.push(body); res.writeHead(200).end() })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  const sub = await app.inject({ method: 'POST', url: '/subscriptions', headers: a.headers, payload: { url, types: ['watch.matched'] } })
  t.equal(sub.statusCode, 201, sub.body)
  const x = 20 + lane++
  const id = await watchOf(a.headers, x)
  const theirs = await create(b.headers, 'hooked', box(x + 0.01, 0.01, 0.01, 0.01))
  const end = Date.now() + 20_000
  while (received.length === 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 50))
  const events = received.map((r) => JSON.parse(r) as { type: string, subject: string, data: { watch_id: string } })
  t.same(events.map((e) => [e.type, e.subject, e.data.watch_id]), [['watch.matched', theirs, id]], 'delivered, and nothing else (only that type was asked for)')
})

t.test('inlineParameters: $n outside quotes only', async (t) => {
  t.equal(inlineParameters('a = $1 AND "x$2" = \'$2\' AND b = $2', ['it\'s', 5]), 'a = E\'it\'\'s\' AND "x$2" = \'$2\' AND b = (5)')
  t.equal(inlineParameters('$10 $1', Array.from({ length: 10 }, (_, i) => i + 1)), '(10) (1)')
  t.equal(inlineParameters('$1', ['back\\slash']), "E'back\\\\slash'")
})
