// App-level behaviour that needs no database (the db decorator is a stub that fails loudly):
// health, OpenAPI, config validation, 404s and 405s, the generic 500 and rate limiting of unauthenticated calls.
import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import { Kysely, PostgresDialect } from 'kysely'
import { buildApp } from '../../src/app.js'
import { durationMs, loadConfig } from '../../src/config.js'
import { bootstrap } from '../../src/bootstrap.js'
import type { Database } from '../../src/db/database.js'
import { collection, expectError, feature, testConfig } from '../helper.js'

// A Kysely whose every query fails as a bug would (not as an outage): nothing here may touch it.
const stubDb = new Kysely<Database>({
  dialect: new PostgresDialect({ pool: { connect: async () => { throw new Error('stub database: no query expected') }, end: async () => {} } as never })
})

async function stubApp (t: Test, overrides = {}) {
  const app = await buildApp({ config: testConfig(overrides), db: stubDb })
  t.teardown(() => app.close())
  return app
}

t.test('/health, /openapi.json', async (t) => {
  const app = await stubApp(t)
  const health = await app.inject({ method: 'GET', url: '/health' })
  t.same(health.json(), { status: 'ok' })
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
  t.equal(doc.openapi.slice(0, 2), '3.')
  t.ok(doc.paths['/sources'].post.responses['422'], 'error statuses are documented')
  t.ok(doc.paths['/token'].post.responses['401'])
})

t.test('a path served with other methods: 405 with Allow; a path not served: 404', async (t) => {
  const app = await stubApp(t)
  const cases: Array<[string, string, string]> = [
    ['OPTIONS', '/sources', 'DELETE, GET, HEAD, PATCH, POST, PUT'],
    ['PUT', '/sources/versions?id=src_0000000000000000000001', 'GET, HEAD'],
    ['GET', '/token', 'POST'],
    ['PUT', '/collections/sources/items', 'GET, HEAD, POST'],
    ['POST', '/collections/sources/items/src_0000000000000000000001', 'DELETE, GET, HEAD, PATCH, PUT'],
    ['OPTIONS', '/conformance', 'GET, HEAD'],
    ['POST', '/map/', 'GET, HEAD']
  ]
  for (const [method, url, allow] of cases) {
    const res = await app.inject({ method: method as 'GET', url })
    const body = expectError(t, res, 405, 'METHOD_NOT_ALLOWED')
    t.equal(res.headers.allow, allow, `${method} ${url}: Allow ${allow}`)
    t.match(body.message, new RegExp(`^${method} is not served on .*: use ${allow}\\.$`))
  }
  for (const [method, url] of [['GET', '/nothing'], ['PUT', '/sources/extra'], ['GET', '/collections/sources/items/a/b'], ['POST', '/collections/other']]) {
    const res = await app.inject({ method: method as 'GET', url })
    expectError(t, res, 404, 'NOT_FOUND')
    t.equal(res.headers.allow, undefined)
  }
})

t.test('an unexpected error is a generic 500 citing the request id, with no internals', async (t) => {
  const app = await stubApp(t)
  const res = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(res.statusCode, 503, 'readiness reports any database failure as 503')
  const login = await app.inject({ method: 'POST', url: '/token', payload: { email: 'a@b.c', password: 'whatever' } })
  t.equal(login.statusCode, 500)
  const body = login.json()
  t.match(body, { status: 500, code: 'INTERNAL_ERROR', message: /^Internal server error \(request [0-9a-f-]{36}\)\.$/, request_id: /^[0-9a-f-]{36}$/ })
  t.notMatch(login.body, /stub database|\.ts|\.js|at /)
})

// A database that answers every query with the given PostgreSQL error, shaped as pg raises it,
// but authentication's look-up of the account, so that a request reaches its handler.
function failingDb (fields: Record<string, string>): Kysely<Database> {
  const account = { disabled: false, role: 'editor', organisation: 'org-a', password_changed_at: new Date(0) }
  const client = {
    query: async (sql: unknown) => {
      if (typeof sql === 'string' && /^select .* from "accounts"/.test(sql)) return { command: 'SELECT', rowCount: 1, rows: [account] }
      throw Object.assign(new Error(fields.message ?? 'error'), { severity: 'ERROR', ...fields })
    },
    release: () => {}
  }
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: { connect: async () => client, end: async () => {} } as never }) })
}

t.test('PostgreSQL errors that reach the handler: named constraints and data exceptions are the client\'s, not 500s', async (t) => {
  const cases: Array<[Record<string, string>, number, string, RegExp]> = [
    [{ code: '23514', constraint: 'sources_period_in_window' }, 422, 'INVALID_PERIOD', /outside the acceptable window/],
    [{ code: '23514', constraint: 'sources_geom_valid' }, 422, 'INVALID_GEOMETRY', /ST_IsValid/],
    [{ code: '23P01', constraint: 'sources_feature_period_excl' }, 409, 'SOURCE_CONFLICT', /already exists/],
    [{ code: '22007', message: 'invalid input syntax for type timestamp' }, 422, 'INVALID_DATA', /rejected a value/],
    [{ code: '57P01', message: 'terminating connection due to administrator command' }, 503, 'SERVICE_UNAVAILABLE', /retry later/],
    [{ code: '42P01', message: 'relation "sources" does not exist' }, 500, 'INTERNAL_ERROR', /^Internal server error/]
  ]
  for (const [fields, status, code, message] of cases) {
    const app = await buildApp({ config: testConfig(), db: failingDb(fields) })
    t.teardown(() => app.close())
    // A write, where these errors can happen (and the document lists their statuses).
    const token = app.signToken({ sub: randomUUID(), org: 'org-a', role: 'editor' }).token
    const res = await app.inject({ method: 'POST', url: '/sources', headers: { authorization: `Bearer ${token}` }, payload: collection(feature('f-1')) })
    const body = expectError(t, res, status, code)
    t.match(body.message, message, String(fields.code))
    t.notMatch(JSON.stringify(body), /relation|timestamp|administrator/, 'no database text reaches the client')
  }
})

t.test('rate limit: unauthenticated calls count per address; 429 with standard headers', async (t) => {
  const app = await stubApp(t, { RATE_LIMIT_MAX: 2 })
  const call = () => app.inject({ method: 'POST', url: '/token', payload: {} })
  t.equal((await call()).statusCode, 400)
  const second = await call()
  t.equal(second.headers['x-ratelimit-limit'], '2')
  t.equal(second.headers['x-ratelimit-remaining'], '0')
  const third = await call()
  t.equal(third.statusCode, 429)
  t.match(third.json(), { status: 429, code: 'TOO_MANY_REQUESTS', message: /Rate limit exceeded/ })
  t.ok(Number(third.headers['retry-after']) > 0)
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'health checks are never limited')
})

t.test('config: defaults, and one clear line for a missing or bad variable', async (t) => {
  const secret = 'x'.repeat(32)
  const config = loadConfig({ DATABASE_URL: 'postgres://db/x', JWT_SECRET: secret })
  t.match(config, { HOST: '127.0.0.1', PORT: 3000, TOKEN_TTL_SECONDS: 3600, MAX_FEATURES: 1000, BODY_LIMIT_BYTES: 10485760 })
  t.ok(Object.isFrozen(config))
  // The CLI needs no secret; the service does, and bootstrap says so before opening anything.
  const withoutSecret = loadConfig({ DATABASE_URL: 'postgres://db/x' })
  await t.rejects(bootstrap(withoutSecret, { info: () => {}, warn: () => {} }), /invalid configuration: .*JWT_SECRET.*when DATABASE_URL is set/)
  t.throws(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '70000' }), /HTTP_HEADERS_TIMEOUT_MS must not be larger than HTTP_REQUEST_TIMEOUT_MS/)
  t.match(loadConfig({}), { DATA_DIR: './data', JWT_SECRET: undefined }, 'no DATABASE_URL: the embedded backend, which generates its secret')
  t.throws(() => loadConfig({ ADMIN_PASSWORD: 'a long enough password' }), /ADMIN_PASSWORD is set without ADMIN_EMAIL/)
  t.match(loadConfig({ EVENTS_RETENTION: '90s' }), { EVENTS_RETENTION: '90s' }, 'a retention in seconds (tests), or 1h 30m, 30d')
  t.equal(durationMs(loadConfig({}).EVENTS_RETENTION), 30 * 86_400_000, 'the retention: 30 days by default')
  for (const bad of ['30', 'soon', '0s', '-5d']) t.throws(() => loadConfig({ EVENTS_RETENTION: bad }), /EVENTS_RETENTION must be a duration/, `EVENTS_RETENTION=${bad}`)
  t.throws(() => loadConfig({ DATABASE_URL: 'postgres://db/x', JWT_SECRET: 'short' }), /JWT_SECRET must NOT have fewer than 32 characters/)
  t.throws(() => loadConfig({ DATABASE_URL: 'postgres://db/x', JWT_SECRET: secret, PORT: 'eighty' }), /PORT/)
  t.throws(() => loadConfig({ DATABASE_URL: 'postgres://db/x', JWT_SECRET: secret, ACCOUNT_CACHE_TTL_SECONDS: '120' }), /ACCOUNT_CACHE_TTL_SECONDS/)
  // A basemap the page's Content-Security-Policy could not allow, or a Redis URL ioredis would
  // read as a host name, stop the start instead of failing quietly later.
  t.throws(() => loadConfig({ MAP_TILE_URL: 'tile.openstreetmap.org/{z}/{x}/{y}.png' }), /MAP_TILE_URL must match pattern/)
  t.match(loadConfig({ MAP_TILE_URL: 'none' }), { MAP_TILE_URL: 'none' })
  t.throws(() => loadConfig({ REDIS_URL: '127.0.0.1:6379' }), /REDIS_URL must match pattern/)
})
