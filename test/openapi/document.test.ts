// The served OpenAPI document itself: valid OpenAPI 3.0 by the specification's own JSON Schemas
// (@seriousme/openapi-schema-validator), the version OGC's oas30 class on the conformance page
// asks for; the seed's paths as the seed writes them; every operation with every status it can
// answer (the table below) and each error status with its own body; and each operation's
// `security` as the service enforces it, tried without a token. (Whether what the service
// sends is what the document says is held by helper.ts on every response of the suite.)
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { Kysely, PostgresDialect } from 'kysely'
import { buildApp } from '../../src/app.js'
import type { Database } from '../../src/db/database.js'
import { testConfig } from '../helper.js'

interface Operation {
  operationId?: string
  security?: unknown[]
  parameters?: Array<{ name: string, in: string, required?: boolean, schema?: { pattern?: string, enum?: string[] } }>
  requestBody?: { content: Record<string, unknown> }
  responses: Record<string, { description?: string, content?: Record<string, { schema?: { $ref?: string, required?: string[] } }>, headers?: Record<string, unknown> }>
}
interface Document {
  openapi: string
  security?: unknown[]
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, { properties: { status: { enum: number[] } } }>, securitySchemes: Record<string, unknown>, responses: Record<string, unknown> }
}

// Every status each operation can answer.
const body = [408, 413, 415]
const authenticated = [401, 429, 500, 503]
// PUT and PATCH of one source (issue 34): 428 without If-Match, 412 for a stale one, 410 once deleted.
const change = [200, 400, 403, 404, 409, 410, 412, 422, 428, ...body, ...authenticated]
const STATUSES: Record<string, number[]> = {
  'GET /': [200, 400, 429, 500],
  'GET /conformance': [200, 429, 500],
  'GET /collections': [200, 400, ...authenticated],
  'GET /collections/sources': [200, 400, ...authenticated],
  'GET /collections/sources/schema': [200, ...authenticated],
  'GET /collections/sources/items': [200, 400, 406, ...authenticated],
  'GET /collections/sources/items/{id}': [200, 304, 400, 404, 406, 410, 414, ...authenticated],
  'GET /collections/sources/items/{id}/versions': [200, 400, 404, 414, ...authenticated],
  'POST /collections/sources/items': [200, 201, 400, 403, 409, 422, ...body, ...authenticated],
  'PUT /collections/sources/items/{id}': [...change, 414],
  'PATCH /collections/sources/items/{id}': [...change, 414],
  'DELETE /collections/sources/items/{id}': [204, 400, 403, 404, 410, 412, 414, ...body, ...authenticated],
  'POST /token': [200, 400, 401, ...body, 429, 500, 503],
  'POST /sources': [200, 201, 400, 403, 409, 422, ...body, ...authenticated],
  'GET /sources/': [200, 304, 400, 404, 410, ...authenticated],
  'PUT /sources/': change,
  'PATCH /sources/': change,
  'DELETE /sources/': [200, 400, 403, 404, 410, 412, ...body, ...authenticated],
  'GET /sources': [200, 304, 400, 404, 410, ...authenticated],
  'PUT /sources': change,
  'PATCH /sources': change,
  'DELETE /sources': [200, 400, 403, 404, 410, 412, ...body, ...authenticated],
  'GET /sources/versions': [200, 400, 404, ...authenticated],
  'GET /organisations/{organisation}/attributes-schema': [200, 304, 400, 404, ...authenticated],
  'PUT /organisations/{organisation}/attributes-schema': [200, 400, 403, 404, 412, ...body, ...authenticated],
  'GET /organisations/{organisation}/attributes-schema/versions': [200, 404, ...authenticated],
  'GET /organisations/{organisation}/attributes-schema/check': [200, 400, 404, ...authenticated],
  'GET /health': [200, 500],
  'GET /ready': [200, 500, 503],
  'GET /openapi.json': [200, 500],
  'GET /map': [200, 206, 304, 308, 412, 416, 500],
  'GET /map/config.json': [200, 500],
  'POST /oauth/token': [200, 400, 401, 413, 429, 500, 503],
  'POST /api-keys': [201, 400, 403, 409, 413, 415, 422, ...authenticated],
  'GET /api-keys': [200, 400, 403, ...authenticated],
  'DELETE /api-keys': [200, 400, 403, 404, ...authenticated],
  'GET /collections/sources/queryables': [200, ...authenticated],
  'GET /collections/sources/sortables': [200, ...authenticated],
  'GET /collections/sources/returnables': [200, ...authenticated],
  'GET /collections/sources/tiles': [200, ...authenticated],
  'GET /collections/sources/tiles/WebMercatorQuad': [200, ...authenticated],
  'GET /collections/sources/tiles/WebMercatorQuad/tilejson.json': [200, ...authenticated],
  'GET /collections/sources/tiles/WebMercatorQuad/{tileMatrix}/{tileRow}/{tileCol}': [200, 204, 304, 400, 404, ...authenticated],
  'GET /collections/sources/tiles/WebMercatorQuad/xyz/{z}/{x}/{y}': [200, 304, 400, 404, ...authenticated],
  'GET /tileMatrixSets': [200, 429, 500],
  'GET /tileMatrixSets/WebMercatorQuad': [200, 429, 500],
  'GET /events': [200, 400, 403, 410, ...authenticated],
  'GET /events/stream': [200, 400, 403, 410, ...authenticated],
  'GET /asyncapi.json': [200, 500],
  'POST /subscriptions': [201, 400, 403, 409, 413, 415, ...authenticated],
  'GET /subscriptions': [200, 400, 403, ...authenticated],
  'DELETE /subscriptions': [200, 400, 403, 404, ...authenticated],
  'GET /subscriptions/deliveries': [200, 400, 404, ...authenticated],
  'GET /conflicts': [200, 400, ...authenticated],
  'GET /collections/conflicts/items': [200, 400, ...authenticated],
  'GET /conflicts/{id}': [200, 304, 400, 404, ...authenticated],
  'GET /collections/conflicts/items/{id}': [200, 304, 400, 404, ...authenticated],
  'POST /conflicts/{id}/stance': [200, 400, 403, 404, 409, 412, 422, 428, ...body, ...authenticated],
  'GET /conflicts/{id}/notes': [200, 400, 404, ...authenticated],
  'POST /conflicts/{id}/notes': [201, 400, 403, 404, 422, ...body, ...authenticated],
  'GET /conflicts/{id}/history': [200, 400, 404, ...authenticated],
  'GET /collections/conflicts': [200, ...authenticated],
  'GET /collections/conflicts/queryables': [200, ...authenticated],
  'GET /collections/conflicts/tiles/WebMercatorQuad/{tileMatrix}/{tileRow}/{tileCol}': [200, 204, 304, 400, 404, ...authenticated],
  'POST /sources/carve': [200, 400, 403, 404, 410, 412, 422, 428, ...body, ...authenticated],
  'POST /collections/sources/items/{id}/carve': [200, 400, 403, 404, 410, 412, 422, 428, ...body, ...authenticated],
  'POST /watches': [201, 400, 403, 422, ...body, ...authenticated],
  'GET /watches': [200, 400, ...authenticated],
  'GET /watches/{id}': [200, 400, 404, ...authenticated],
  'DELETE /watches/{id}': [200, 400, 403, 404, ...body, ...authenticated]
}
const PUBLIC = ['GET /', 'GET /conformance', 'POST /token', 'GET /health', 'GET /ready', 'GET /openapi.json', 'GET /map', 'GET /map/config.json', 'GET /asyncapi.json', 'GET /tileMatrixSets', 'GET /tileMatrixSets/WebMercatorQuad']
// A signed-in caller by a token, an API key as bearer or as Basic's password, or an OAuth2 token of
// the scope the operation needs (plugins/auth.ts).
const READ = [{ bearerAuth: [] }, { apiKey: [] }, { basicAuth: [] }, { oauth2: ['read'] }]
const WRITE = [{ bearerAuth: [] }, { apiKey: [] }, { basicAuth: [] }, { oauth2: ['write'] }]
// Operations whose security is neither public nor READ: writes, a key made only with a password's
// token (a key cannot mint keys), and the client-credentials grant (the key as Basic, or in the form).
const SECURITY: Record<string, unknown[]> = {
  'POST /sources': WRITE,
  'PUT /organisations/{organisation}/attributes-schema': WRITE,
  'PUT /sources/': WRITE,
  'PATCH /sources/': WRITE,
  'DELETE /sources/': WRITE,
  'PUT /sources': WRITE,
  'PATCH /sources': WRITE,
  'DELETE /sources': WRITE,
  'POST /collections/sources/items': WRITE,
  'PUT /collections/sources/items/{id}': WRITE,
  'PATCH /collections/sources/items/{id}': WRITE,
  'DELETE /collections/sources/items/{id}': WRITE,
  'DELETE /api-keys': WRITE,
  'POST /subscriptions': WRITE,
  'DELETE /subscriptions': WRITE,
  'POST /conflicts/{id}/stance': WRITE,
  'POST /conflicts/{id}/notes': WRITE,
  'POST /sources/carve': WRITE,
  'POST /collections/sources/items/{id}/carve': WRITE,
  'POST /watches': WRITE,
  'DELETE /watches/{id}': WRITE,
  'POST /api-keys': [{ bearerAuth: [] }],
  'POST /oauth/token': [{ basicAuth: [] }, {}]
}
const SOURCE_ID = 'src_0123456789abcdefghij'

const stubDb = new Kysely<Database>({
  dialect: new PostgresDialect({ pool: { connect: async () => { throw new Error('stub database: not reachable') }, end: async () => {} } as never })
})
const app = await buildApp({ config: testConfig(), db: stubDb })
t.teardown(() => app.close())
const served = await app.inject({ method: 'GET', url: '/openapi.json' })
const doc = served.json() as Document
const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as const))

t.test('valid OpenAPI 3.0.3, served as such; OGC\'s oas30 class declared', async (t) => {
  const validator = new Validator()
  const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>)
  t.same(result, { valid: true }, JSON.stringify(result.errors))
  t.equal(validator.version, '3.0')
  t.equal(doc.openapi, '3.0.3')
  t.equal(served.headers['content-type'], 'application/vnd.oai.openapi+json;version=3.0', 'as declared, unquoted: GDAL compares it token by token')
  const conformance = (await app.inject({ method: 'GET', url: '/conformance' })).json() as { conformsTo: string[] }
  t.ok(conformance.conformsTo.includes('http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30'))
})

t.test('every operation, and every status it can answer', async (t) => {
  const sorted = (statuses: number[]) => [...statuses].sort((a, b) => a - b)
  t.same(Object.fromEntries(operations.map(([name, op]) => [name, sorted(Object.keys(op.responses).map(Number))])),
    Object.fromEntries(Object.entries(STATUSES).map(([name, statuses]) => [name, sorted(statuses)])))
  const ids = operations.map(([, op]) => op.operationId)
  t.equal(new Set(ids).size, ids.length, 'an operationId each, none twice')
  t.notOk(ids.includes(undefined))
})

t.test('each error status answers its own body: status, message, code, the pointers where they exist', async (t) => {
  for (const [name, op] of operations) {
    for (const [status, response] of Object.entries(op.responses)) {
      if (Number(status) < 400) continue
      // RFC 6749 §5.2 sets the client-credentials grant's 400 and 401: { error, error_description }.
      if (name === 'POST /oauth/token' && ['400', '401'].includes(status)) {
        t.match(response.content?.['application/json']?.schema, { required: ['error'] }, `${name} ${status}: RFC 6749's error body`)
        continue
      }
      t.same(Object.keys(response.content ?? {}), ['application/json'], `${name} ${status}`)
      const ref = response.content?.['application/json']?.schema?.$ref
      t.equal(ref, `#/components/schemas/Error${status}`, `${name} ${status}`)
    }
  }
  for (const [name, schema] of Object.entries(doc.components.schemas).filter(([n]) => n.startsWith('Error'))) {
    t.same(schema.properties.status.enum, [Number(name.slice(5))], name)
    t.match(schema, { required: ['status', 'message', 'code'], additionalProperties: false }, name)
  }
  t.ok(doc.components.schemas.Error400?.properties && 'details' in doc.components.schemas.Error400.properties)
  t.match(doc.components.schemas.Error500, { required: ['status', 'message', 'code', 'request_id'] })
  t.match(doc.components.responses, { NotFound: {}, MethodNotAllowed: { headers: { Allow: {} } } })
})

t.test('the media types as sent; the items page with its links and counts', async (t) => {
  const media = (name: string, status = '200') => Object.keys(operations.find(([n]) => n === name)?.[1].responses[status]?.content ?? {})
  t.same(media('GET /collections/sources/items'), ['application/geo+json', 'application/geo+json-seq', 'application/x-ndjson', 'text/csv', 'application/flatgeobuf', 'text/html'], 'the items in every format')
  t.same(media('GET /collections/sources/items/{id}'), ['application/geo+json', 'text/html'])
  for (const name of ['GET /sources/', 'GET /sources']) t.same(media(name), ['application/geo+json'], name)
  t.same(media('GET /collections/sources/schema'), ['application/schema+json'])
  t.same(media('GET /map'), ['text/html'])
  t.same(media('GET /openapi.json'), ['application/vnd.oai.openapi+json;version=3.0'])
  t.same(media('POST /sources', '201'), ['application/json'])
  const itemsOp = doc.paths['/collections/sources/items']?.get
  const f = itemsOp?.parameters?.find((p) => p.name === 'f') as { in: string, schema: { enum: string[] } } | undefined
  t.equal(f?.in, 'query')
  for (const name of ['json', 'geojson', 'geojsonseq', 'ndjson', 'csv', 'fgb', 'html']) t.ok(f?.schema.enum.includes(name), `f names ${name}`)
  const items = doc.paths['/collections/sources/items']?.get?.responses['200']?.content?.['application/geo+json']?.schema
  t.match(items?.required, ['type', 'features', 'links', 'numberReturned', 'timeStamp'])
  t.match(doc.paths['/sources']?.post?.requestBody?.content, { 'application/json': {}, 'application/geo+json': {} })
})

t.test('the seed\'s paths as it writes them: GET and DELETE /sources/?id=, POST /sources', async (t) => {
  for (const method of ['get', 'delete']) {
    for (const path of ['/sources/', '/sources']) {
      const id = doc.paths[path]?.[method]?.parameters?.find((p) => p.name === 'id')
      t.match(id, { in: 'query', required: true, schema: { pattern: /^\^src_/ } }, `${method} ${path}`)
    }
  }
  t.ok(doc.paths['/sources']?.post)
  t.ok(doc.paths['/token']?.post)
})

t.test('security as enforced: bearer everywhere but the public operations, which answer without a token', async (t) => {
  t.same(Object.keys(doc.components.securitySchemes).sort(), ['apiKey', 'basicAuth', 'bearerAuth', 'metricsToken', 'oauth2'])
  t.match(doc.components.securitySchemes, { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, basicAuth: { type: 'http', scheme: 'basic' }, oauth2: { type: 'oauth2' } })
  t.same(doc.security, [{ bearerAuth: [] }], 'bearer by default')
  for (const [name, op] of operations) {
    const isPublic = PUBLIC.includes(name)
    t.same(op.security, isPublic ? [] : SECURITY[name] ?? READ, name)
    if (name === 'POST /oauth/token') continue // its 401 is RFC 6749's invalid_client, tried in test/accounts/oauth.test.ts
    const [method, path] = name.split(' ') as [string, string]
    const url = path.replace('{id}', SOURCE_ID) + (path.startsWith('/sources') && method !== 'POST' ? `?id=${SOURCE_ID}` : '')
    const res = await app.inject({ method: method as 'GET', url, ...(method === 'POST' ? { payload: {} } : {}) })
    if (isPublic) t.not(res.statusCode, 401, `${name} without a token: ${res.statusCode}`)
    else t.equal(res.statusCode, 401, `${name} without a token`)
  }
})
