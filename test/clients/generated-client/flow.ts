// The seed's flow through a client generated from the service's own /openapi.json: types by
// openapi-typescript, calls by openapi-fetch. test/clients/generated-client.test.ts generates
// api.d.ts beside a copy of this file, compiles both with tsc (a change of the document that
// breaks a client breaks this), then runs it against a service over a socket:
//   node flow.js <base URL> <e-mail> <password>
// It prints one JSON line with what it saw; any surprise throws. Kept out of the project's
// tsconfig: api.d.ts exists only where the test generates it.
import assert from 'node:assert/strict'
import createClient from 'openapi-fetch'
import type { paths } from './api.js'

type SourceFeature = paths['/sources/']['get']['responses'][200]['content']['application/geo+json']
type ItemsPage = paths['/collections/sources/items']['get']['responses'][200]['content']['application/geo+json']

const [base, email, password] = process.argv.slice(2)
assert.ok(base !== undefined && email !== undefined && password !== undefined, 'usage: flow.js <base URL> <e-mail> <password>')
// The items are sent in six formats (GeoJSON by default): the client names the media types it reads,
// and openapi-fetch types each answer with those alone.
const client = createClient<paths, 'application/json' | 'application/geo+json'>({ baseUrl: base })

// A token.
const login = await client.POST('/token', { body: { email, password } })
assert.ok(login.data !== undefined, `POST /token: ${login.response.status}`)
const expiresIn: number = login.data.expires_in
const auth = { Authorization: `Bearer ${login.data.token}` }

// Three sources in one request, side by side in one 1° strip.
const square = (x: number): number[][][] => [[[x, 50], [x + 0.25, 50], [x + 0.25, 50.25], [x, 50.25], [x, 50]]]
const feature = (id: string, x: number, start = '2024-01-01T00:00:00Z', end = '2024-12-31T00:00:00Z') =>
  ({ type: 'Feature' as const, id, properties: { start_at: start, end_at: end }, geometry: { type: 'Polygon' as const, coordinates: square(x) } })
const created = await client.POST('/sources', {
  headers: auth,
  body: { type: 'FeatureCollection', features: [feature('client-a', 20), feature('client-b', 20.3), feature('client-c', 20.6)] }
})
assert.equal(created.response.status, 201)
assert.ok(created.data !== undefined && !('dry_run' in created.data))
const ids: string[] = created.data.sources.map((s) => s.id)
const [first] = ids
assert.ok(first !== undefined && ids.length === 3)

// One of them, as the seed asks for it: GET /sources/?id=.
const got = await client.GET('/sources/', { headers: auth, params: { query: { id: first } } })
assert.ok(got.data !== undefined, `GET /sources/: ${got.response.status}`)
const source: SourceFeature = got.data
assert.equal(source.id, first)
assert.equal(source.properties.feature_id, 'client-a')
assert.equal(got.response.headers.get('content-type')?.split(';')[0], 'application/geo+json')

// A page of the items in a bbox, and the next page through its cursor.
const bbox = '19.9,49.9,21,50.5'
const page = await client.GET('/collections/sources/items', { headers: auth, params: { query: { bbox, limit: '2' } } })
assert.ok(page.data !== undefined, `GET items: ${page.response.status}`)
const one: ItemsPage = page.data
const next = one.links.find((l) => l.rel === 'next')
assert.ok(next !== undefined, 'a next link')
const cursor = new URL(next.href).searchParams.get('cursor')
assert.ok(cursor !== null)
const rest = await client.GET('/collections/sources/items', { headers: auth, params: { query: { bbox, limit: '2', cursor } } })
assert.ok(rest.data !== undefined, `GET items with the cursor: ${rest.response.status}`)
const two: ItemsPage = rest.data
const pages = [one.numberReturned, two.numberReturned]
const seen = [...one.features, ...two.features].map((f) => f.id).sort()
assert.deepEqual(seen, [...ids].sort())
assert.equal(two.links.some((l) => l.rel === 'next'), false)

// Delete one, as the seed does: DELETE /sources/?id=; then it is Gone (410) for its owner, whose
// body says when and which version (typed by the document).
const deleted = await client.DELETE('/sources/', { headers: auth, params: { query: { id: first } } })
assert.ok(deleted.data !== undefined, `DELETE /sources/: ${deleted.response.status}`)
const gone = await client.GET('/sources/', { headers: auth, params: { query: { id: first } } })
assert.equal(gone.response.status, 410)
assert.ok(gone.error !== undefined)
const goneCode: string = gone.error.code

// A period outside the acceptable window: 422, with a pointer to the feature.
const early = await client.POST('/sources', { headers: auth, body: { type: 'FeatureCollection', features: [feature('client-old', 21, '1899-12-31T23:59:59Z', '1950-01-01')] } })
assert.equal(early.response.status, 422)
assert.ok(early.error !== undefined)
// The error bodies are told apart by their status, as the document's enums type them.
const pointer = early.error.status === 422 ? early.error.details?.[0]?.pointer : undefined

process.stdout.write(`${JSON.stringify({ expiresIn, created: ids.length, got: source.id, pages, deleted: deleted.data.message, gone: goneCode, invalid: early.error.code, pointer })}\n`)
