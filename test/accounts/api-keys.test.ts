// API keys (POST, GET, DELETE /api-keys) and where they work: as a bearer token and as the
// password of HTTP Basic, on every authenticated endpoint; a read key is a viewer at most, a
// write key keeps its account's role; revoked, expired, or of a disabled account → 401 with
// WWW-Authenticate (on another instance within ACCOUNT_CACHE_TTL_SECONDS); wrong keys count
// toward the address throttle; rate limits per key; last use written at most once per interval;
// creation and revocation logged with who did it, the key never.
import t from 'tap'
import { Writable } from 'node:stream'
import { Value } from '@sinclair/typebox/value'
import pino from 'pino'
import { sql } from 'kysely'
import { buildApp } from '../../src/app.js'
import { openDatabase } from '../../src/db/open.js'
import { setAccountDisabled } from '../../src/accounts/accounts.repository.js'
import { ApiKeyListSchema, CreatedApiKeySchema } from '../../src/accounts/api-keys.schema.js'
import { addAccount, backend, build, createDatabase, collection, expectError, feature, login, session, targetConfig, testConfig, type TestApp } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx

type Created = { id: string, key: string, prefix: string, scope: string, expires_at?: string }
async function createKey (bearer: string, body: object = { name: 'qgis laptop', scope: 'read' }, on: TestApp = ctx): Promise<Created> {
  const res = await on.app.inject({ method: 'POST', url: '/api-keys', headers: { authorization: `Bearer ${bearer}` }, payload: body })
  if (res.statusCode !== 201) throw new Error(`creating a key: ${res.statusCode} ${res.body}`)
  return res.json() as Created
}
const basic = (key: string, user = 'anyone') => `Basic ${Buffer.from(`${user}:${key}`).toString('base64')}`
const get = (url: string, authorization: string, on: TestApp = ctx) => on.app.inject({ method: 'GET', url, headers: { authorization } })

const editor = await session(ctx, 'editor', 'org-a')
const created = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('k-1')) })
const sourceId = (created.json() as { sources: Array<{ id: string }> }).sources[0]?.id as string

t.test('POST /api-keys: 201, the key shown once (srk_, 256 bits), never again', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/api-keys', headers: editor.headers, payload: { name: 'qgis laptop', scope: 'read' } })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['cache-control'], 'no-store')
  const body = res.json() as Created & { name: string, account_id: string, created_at: string }
  t.ok(Value.Check(CreatedApiKeySchema, body), 'matches its schema')
  t.match(body.key, /^srk_[0-9A-Za-z]{22}_[0-9A-Za-z]{43}$/)
  t.ok(43 * Math.log2(62) >= 256, 'the secret part carries at least 256 bits')
  t.equal(body.key.slice(4, 26), body.id, 'the id is in the key')
  t.equal(body.prefix, `srk_${body.id}_`)
  t.same([body.name, body.scope, body.account_id, body.expires_at], ['qgis laptop', 'read', editor.account.id, undefined])
  const other = await createKey(editor.token)
  t.not(other.key, body.key, 'each key is new')
  const list = await get('/api-keys', `Bearer ${editor.token}`)
  t.equal(list.statusCode, 200)
  t.ok(Value.Check(ApiKeyListSchema, list.json()))
  t.notMatch(list.body, body.key.slice(27), 'the listing never holds a secret')
  t.ok((list.json() as { api_keys: Array<{ id: string }> }).api_keys.some((k) => k.id === body.id))
  const stored = await sql<{ secret_sha256: Uint8Array }>`SELECT secret_sha256 FROM api_keys WHERE id = ${body.id}`.execute(db)
  t.equal(Buffer.from(stored.rows[0]?.secret_sha256 ?? []).length, 32, 'only a SHA-256 is stored')
})

t.test('POST /api-keys: bad input', async (t) => {
  const post = (payload: unknown) => app.inject({ method: 'POST', url: '/api-keys', headers: editor.headers, payload: payload as object })
  expectError(t, await post({ name: 'x', scope: 'admin' }), 400, 'VALIDATION_FAILED')
  expectError(t, await post({ name: '   ', scope: 'read' }), 400, 'VALIDATION_FAILED')
  expectError(t, await post({ scope: 'read' }), 400, 'VALIDATION_FAILED')
  expectError(t, await post({ name: 'x', scope: 'read', expires_at: 'tomorrow' }), 400, 'VALIDATION_FAILED')
  const past = expectError(t, await post({ name: 'x', scope: 'read', expires_at: '2020-01-01T00:00:00Z' }), 422, 'INVALID_EXPIRY')
  t.equal(past.details?.[0]?.pointer, '/expires_at')
  expectError(t, await app.inject({ method: 'POST', url: '/api-keys', payload: { name: 'x', scope: 'read' } }), 401, 'UNAUTHORIZED')
})

t.test('a key works as Bearer and as the password of HTTP Basic, on every endpoint a token works on', async (t) => {
  const { key } = await createKey(editor.token, { name: 'everywhere', scope: 'read' })
  for (const [how, authorization] of [['Bearer', `Bearer ${key}`], ['Basic', basic(key)], ['Basic, empty user', basic(key, '')], ['bare', key]] as const) {
    for (const url of [`/sources/?id=${sourceId}`, `/collections/sources/items/${sourceId}`, '/collections/sources/items?limit=5', '/collections', '/collections/sources', '/api-keys']) {
      t.equal((await get(url, authorization)).statusCode, 200, `${how} ${url}`)
    }
  }
  const items = (await get('/collections/sources/items', basic(key))).json() as { features: Array<{ id: string }> }
  t.same(items.features.map((f) => f.id), [sourceId], 'the account\'s organisation, as with its token')
})

t.test('scope: a read key gets 403 on writes, a write key keeps the account\'s role, never more', async (t) => {
  const read = await createKey(editor.token, { name: 'read', scope: 'read' })
  const write = await createKey(editor.token, { name: 'write', scope: 'write' })
  const post = (authorization: string, id: string) => app.inject({ method: 'POST', url: '/sources', headers: { authorization }, payload: collection(feature(id)) })
  const forbidden = expectError(t, await post(basic(read.key), 'scope-1'), 403, 'FORBIDDEN')
  t.match(forbidden.message, /read API key/)
  expectError(t, await app.inject({ method: 'DELETE', url: `/sources/?id=${sourceId}`, headers: { authorization: `Bearer ${read.key}` } }), 403, 'FORBIDDEN')
  t.equal((await post(basic(write.key), 'scope-2')).statusCode, 201, 'an editor\'s write key writes')
  t.equal((await post(`Bearer ${write.key}`, 'scope-3')).statusCode, 201)

  const viewer = await session(ctx, 'viewer', 'org-a')
  const viewerWrite = await createKey(viewer.token, { name: 'viewer write', scope: 'write' })
  expectError(t, await post(basic(viewerWrite.key), 'scope-4'), 403, 'FORBIDDEN')

  const admin = await session(ctx, 'admin', 'org-z')
  const adminRead = await createKey(admin.token, { name: 'admin read', scope: 'read' })
  t.equal((await get(`/sources/?id=${sourceId}`, basic(adminRead.key))).statusCode, 200, 'an admin\'s read key reads every organisation')
  t.equal((await get('/collections/sources/items?organisation=org-a', basic(adminRead.key))).statusCode, 200, 'and may filter by organisation')
  expectError(t, await post(basic(adminRead.key), 'scope-5'), 403, 'FORBIDDEN')
})

t.test('401 with WWW-Authenticate (Bearer and Basic) for every wrong key', async (t) => {
  const { key, id } = await createKey(editor.token)
  const otherSecret = `srk_${id}_${'A'.repeat(43)}`
  const cases: Array<[string, string, RegExp, boolean]> = [
    ['Basic, wrong secret', basic(otherSecret), /not valid/, false],
    ['Basic, unknown id', basic(`srk_${'B'.repeat(22)}_${'C'.repeat(43)}`), /not valid/, false],
    ['Basic, truncated', basic(key.slice(0, -1)), /not valid/, false],
    ['Basic, the account\'s password', basic(editor.account.password, editor.account.email), /not the account's password/, false],
    ['Basic, no colon', `Basic ${Buffer.from(key).toString('base64')}`, /Malformed/, true],
    ['Bearer, wrong secret', `Bearer ${otherSecret}`, /not valid/, true],
    ['Bearer, truncated', `Bearer ${key.slice(0, 30)}`, /not valid/, true]
  ]
  for (const [name, authorization, message, invalidToken] of cases) {
    const res = await get('/collections/sources/items', authorization)
    const body = expectError(t, res, 401, 'UNAUTHORIZED')
    t.match(body.message, message, name)
    const challenge = String(res.headers['www-authenticate'])
    t.match(challenge, /^Bearer realm="source-registry"/, `${name}: Bearer offered`)
    t.match(challenge, /Basic realm="source-registry"/, `${name}: Basic offered`)
    t.equal(challenge.includes('error="invalid_token"'), invalidToken, `${name}: invalid_token only for a bearer credential`)
  }
  const none = await get('/collections', '')
  t.match(String(none.headers['www-authenticate']), /^Bearer realm="source-registry", Basic realm="source-registry"/)
  const fromScript = await app.inject({ method: 'GET', url: '/collections', headers: { 'sec-fetch-mode': 'cors' } })
  t.equal(fromScript.headers['www-authenticate'], 'Bearer realm="source-registry"', 'a browser\'s script is offered Bearer alone (no password dialog)')
  const mapPage = await app.inject({ method: 'POST', url: '/token', headers: { 'x-requested-with': 'XMLHttpRequest' }, payload: { email: editor.account.email, password: 'wrong password!' } })
  t.equal(mapPage.headers['www-authenticate'], 'Bearer realm="source-registry"', 'so is the map page, which says X-Requested-With')
  const wrongLogin = await app.inject({ method: 'POST', url: '/token', payload: { email: editor.account.email, password: 'wrong password!' } })
  t.match(String(wrongLogin.headers['www-authenticate']), /Bearer realm="source-registry", Basic realm=/, 'every 401 says so, POST /token\'s too')
})

t.test('revoked: 401 at once on this instance; listed no more; 404 the second time', async (t) => {
  const { key, id } = await createKey(editor.token)
  t.equal((await get('/collections', basic(key))).statusCode, 200)
  const res = await app.inject({ method: 'DELETE', url: `/api-keys/?id=${id}`, headers: editor.headers })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { message: new RegExp(id) })
  const refused = expectError(t, await get('/collections', basic(key)), 401, 'UNAUTHORIZED')
  t.match(refused.message, /revoked/)
  t.notOk(((await get('/api-keys', `Bearer ${editor.token}`)).json() as { api_keys: Array<{ id: string }> }).api_keys.some((k) => k.id === id))
  expectError(t, await app.inject({ method: 'DELETE', url: `/api-keys?id=${id}`, headers: editor.headers }), 404, 'NOT_FOUND')
  expectError(t, await app.inject({ method: 'DELETE', url: '/api-keys/?id=nope', headers: editor.headers }), 400, 'VALIDATION_FAILED')
  const row = await sql<{ revoked_by: string }>`SELECT revoked_by FROM api_keys WHERE id = ${id}`.execute(db)
  t.equal(row.rows[0]?.revoked_by, editor.account.id, 'who revoked it is recorded')
})

t.test('who may manage which keys', async (t) => {
  const other = await session(ctx, 'editor', 'org-a')
  const mine = await createKey(editor.token)
  const write = await createKey(editor.token, { name: 'w', scope: 'write' })
  expectError(t, await app.inject({ method: 'DELETE', url: `/api-keys/?id=${mine.id}`, headers: other.headers }), 404, 'NOT_FOUND')
  expectError(t, await get(`/api-keys?account_id=${editor.account.id}`, `Bearer ${other.token}`), 403, 'FORBIDDEN')
  const made = expectError(t, await app.inject({ method: 'POST', url: '/api-keys', headers: { authorization: basic(write.key) }, payload: { name: 'x', scope: 'read' } }), 403, 'FORBIDDEN')
  t.match(made.message, /not with an API key/)
  expectError(t, await app.inject({ method: 'DELETE', url: `/api-keys/?id=${mine.id}`, headers: { authorization: basic(mine.key) } }), 403, 'FORBIDDEN')
  t.equal((await app.inject({ method: 'DELETE', url: `/api-keys/?id=${mine.id}`, headers: { authorization: basic(write.key) } })).statusCode, 200, 'a write key revokes its account\'s keys')

  const admin = await session(ctx, 'admin', 'org-z')
  const all = (await get('/api-keys', `Bearer ${admin.token}`)).json() as { api_keys: Array<{ account_id: string }> }
  t.ok(all.api_keys.some((k) => k.account_id === editor.account.id), 'an admin lists every account\'s keys')
  const one = (await get(`/api-keys?account_id=${editor.account.id}`, `Bearer ${admin.token}`)).json() as { api_keys: Array<{ account_id: string }> }
  t.ok(one.api_keys.length > 0 && one.api_keys.every((k) => k.account_id === editor.account.id), 'or one account\'s')
  t.equal((await app.inject({ method: 'DELETE', url: `/api-keys/?id=${write.id}`, headers: admin.headers })).statusCode, 200, 'an admin revokes any account\'s key')
  const mineOnly = (await get('/api-keys', `Bearer ${other.token}`)).json() as { api_keys: Array<{ account_id: string }> }
  t.ok(mineOnly.api_keys.every((k) => k.account_id === other.account.id), 'others list their own')
})

t.test('expiry: a key past expires_at is refused, and listed as expired', async (t) => {
  // Four seconds: still in force when first used, however slow the key's creation.
  const soon = new Date(Date.now() + 4000).toISOString()
  const key = await createKey(editor.token, { name: 'short', scope: 'read', expires_at: soon })
  t.equal(key.expires_at, soon)
  t.equal((await get('/collections', basic(key.key))).statusCode, 200)
  await new Promise((resolve) => setTimeout(resolve, Date.parse(soon) - Date.now() + 100))
  const refused = expectError(t, await get('/collections', basic(key.key)), 401, 'UNAUTHORIZED')
  t.match(refused.message, /expired/)
  const listed = ((await get('/api-keys', `Bearer ${editor.token}`)).json() as { api_keys: Array<{ id: string, expired: boolean }> }).api_keys.find((k) => k.id === key.id)
  t.equal(listed?.expired, true)
})

t.test('a disabled account\'s keys stop working', async (t) => {
  const leaving = await addAccount(db, { role: 'editor', organisation: 'org-a' })
  const key = await createKey(await login(app, leaving.email))
  t.equal((await get('/collections', basic(key.key))).statusCode, 200)
  await setAccountDisabled(db, leaving.email, true)
  const refused = expectError(t, await get('/collections', basic(key.key)), 401, 'UNAUTHORIZED')
  t.match(refused.message, /disabled/)
})

t.test('the account cache covers keys: a revocation made elsewhere is seen within ACCOUNT_CACHE_TTL_SECONDS', async (t) => {
  // A TTL of some seconds, so a loaded machine still sends the second request within it.
  const cached = await build(t, { ACCOUNT_CACHE_TTL_SECONDS: 4 })
  const owner = await session(cached, 'editor', 'org-a')
  const key = await createKey(owner.token, undefined, cached)
  t.equal((await get('/collections', basic(key.key), cached)).statusCode, 200)
  await sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${key.id}`.execute(cached.db)
  t.equal((await get('/collections', basic(key.key), cached)).statusCode, 200, 'still cached: no database read on this request')
  await new Promise((resolve) => setTimeout(resolve, 4100))
  expectError(t, await get('/collections', basic(key.key), cached), 401, 'UNAUTHORIZED')
})

t.test('two instances on one database: a key revoked on one is refused on the other within the TTL', { skip: backend === 'embedded' ? 'server backend only: an embedded data directory serves one process' : false }, async (t) => {
  const first = await build(t, { ACCOUNT_CACHE_TTL_SECONDS: 1 })
  const second = await build(t, { ACCOUNT_CACHE_TTL_SECONDS: 1 }, { url: first.url })
  const owner = await session(first, 'editor', 'org-a')
  const key = await createKey(owner.token, undefined, first)
  t.same([(await get('/collections', basic(key.key), first)).statusCode, (await get('/collections', basic(key.key), second)).statusCode], [200, 200])
  t.equal((await first.app.inject({ method: 'DELETE', url: `/api-keys/?id=${key.id}`, headers: owner.headers })).statusCode, 200)
  t.equal((await get('/collections', basic(key.key), first)).statusCode, 401, 'at once where it was revoked')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal((await get('/collections', basic(key.key), second)).statusCode, 401, 'within the TTL on the other')
})

t.test('last use: written on first use, then at most once per interval', async (t) => {
  const key = await createKey(editor.token)
  const lastUsed = async () => (await sql<{ last_used_at: Date | null }>`SELECT last_used_at FROM api_keys WHERE id = ${key.id}`.execute(db)).rows[0]?.last_used_at ?? null
  t.equal(await lastUsed(), null, 'never used')
  await get('/collections', basic(key.key))
  for (let i = 0; i < 50 && await lastUsed() === null; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  t.ok(await lastUsed() instanceof Date, 'written after the first use')
  await sql`UPDATE api_keys SET last_used_at = '2001-01-01Z' WHERE id = ${key.id}`.execute(db)
  for (let i = 0; i < 5; i++) await get('/collections', basic(key.key))
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.same(await lastUsed(), new Date('2001-01-01Z'), 'not written again within the interval')
  const listed = ((await get('/api-keys', `Bearer ${editor.token}`)).json() as { api_keys: Array<{ id: string, last_used_at?: string }> }).api_keys.find((k) => k.id === key.id)
  t.equal(listed?.last_used_at, '2001-01-01T00:00:00.000Z')
})

t.test('at most API_KEY_MAX_PER_ACCOUNT keys in force: 409', async (t) => {
  const small = await build(t, { API_KEY_MAX_PER_ACCOUNT: 2 })
  const owner = await session(small, 'viewer', 'org-a')
  const first = await createKey(owner.token, undefined, small)
  await createKey(owner.token, undefined, small)
  expectError(t, await small.app.inject({ method: 'POST', url: '/api-keys', headers: owner.headers, payload: { name: 'third', scope: 'read' } }), 409, 'API_KEY_LIMIT')
  await small.app.inject({ method: 'DELETE', url: `/api-keys/?id=${first.id}`, headers: owner.headers })
  t.equal((await small.app.inject({ method: 'POST', url: '/api-keys', headers: owner.headers, payload: { name: 'third', scope: 'read' } })).statusCode, 201, 'a revoked key frees its place')
})

t.test('rate limits are per key', async (t) => {
  const limited = await build(t, { RATE_LIMIT_MAX: 3 })
  const owner = await addAccount(limited.db, { role: 'viewer', organisation: 'org-a' })
  const token = await login(limited.app, owner.email)
  const a = await createKey(token, undefined, limited)
  const b = await createKey(token, undefined, limited)
  const statuses = async (key: string) => { const out: number[] = []; for (let i = 0; i < 4; i++) out.push((await get('/collections', basic(key), limited)).statusCode); return out }
  t.same(await statuses(a.key), [200, 200, 200, 429], 'one key runs out')
  t.same(await statuses(b.key), [200, 200, 200, 429], 'the other has its own count')
})

t.test('wrong keys count toward the address throttle, with failed logins', async (t) => {
  const throttled = await build(t, { LOGIN_ADDRESS_MAX_FAILURES: 3, ACCOUNT_CACHE_TTL_SECONDS: 30 })
  const owner = await addAccount(throttled.db, { role: 'viewer', organisation: 'org-a' })
  const good = await createKey(await login(throttled.app, owner.email), undefined, throttled)
  t.equal((await get('/collections', basic(good.key), throttled)).statusCode, 200)
  const wrong = `srk_${good.id}_${'Z'.repeat(43)}`
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) statuses.push((await get('/collections', basic(wrong), throttled)).statusCode)
  t.same(statuses, [401, 401, 429, 429], 'the third failure reaches the limit')
  const refused = await get('/collections', basic(wrong), throttled)
  t.ok(Number(refused.headers['retry-after']) > 0, 'with Retry-After')
  const login429 = await throttled.app.inject({ method: 'POST', url: '/token', payload: { email: owner.email, password: owner.password } })
  expectError(t, login429, 429, 'TOO_MANY_REQUESTS')
  t.equal((await get('/collections', basic(good.key), throttled)).statusCode, 200, 'a key already verified here goes on working')
})

t.test('creation and revocation are logged with who did it; the key never is', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _enc, done) { lines.push(String(chunk)); done() } })
  const config = testConfig({ ...targetConfig(await createDatabase(t)), LOG_LEVEL: 'info' })
  const { db: logDb } = await openDatabase(config)
  const logged = await buildApp({ config, db: logDb, loggerInstance: pino({ level: 'info' }, stream) })
  t.teardown(() => logged.close())
  const owner = await addAccount(logDb, { role: 'editor', organisation: 'org-a' })
  const token = await login(logged, owner.email)
  const res = await logged.inject({ method: 'POST', url: '/api-keys', headers: { authorization: `Bearer ${token}` }, payload: { name: 'logged', scope: 'write' } })
  const key = res.json() as Created
  await logged.inject({ method: 'GET', url: '/collections', headers: { authorization: basic(key.key) } })
  await logged.inject({ method: 'GET', url: '/collections', headers: { authorization: basic(`srk_${key.id}_${'Q'.repeat(43)}`) } })
  await logged.inject({ method: 'DELETE', url: `/api-keys/?id=${key.id}`, headers: { authorization: `Bearer ${token}` } })
  const entries = lines.map((l) => JSON.parse(l) as { msg: string, keyId?: string, by?: string, accountId?: string })
  t.match(entries.find((e) => e.msg === 'api key created'), { keyId: key.id, accountId: owner.id, by: owner.id })
  t.match(entries.find((e) => e.msg === 'api key revoked'), { keyId: key.id, accountId: owner.id, by: owner.id })
  const secret = key.key.slice(27)
  t.notOk(lines.some((l) => l.includes(secret)), 'the secret is in no log line')
  t.ok(lines.some((l) => /rejected: The API key is not valid/.test(l)), 'a wrong key is logged as rejected, without the key')
})

t.test('the OpenAPI document declares the schemes: bearer token, key, Basic, OAuth2', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { components: { securitySchemes: Record<string, { type: string, scheme?: string, flows?: unknown }> }, paths: Record<string, Record<string, { security?: unknown[] }>> }
  const schemes = doc.components.securitySchemes
  t.match(schemes, { bearerAuth: { type: 'http', scheme: 'bearer' }, apiKey: { type: 'http', scheme: 'bearer' }, basicAuth: { type: 'http', scheme: 'basic' }, oauth2: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: '/oauth/token' } } } })
  t.same(doc.paths['/collections/sources/items']?.get?.security, [{ bearerAuth: [] }, { apiKey: [] }, { basicAuth: [] }, { oauth2: ['read'] }])
  t.same(doc.paths['/sources']?.post?.security, [{ bearerAuth: [] }, { apiKey: [] }, { basicAuth: [] }, { oauth2: ['write'] }])
  t.same(doc.paths['/api-keys']?.post?.security, [{ bearerAuth: [] }])
})
