// POST /oauth/token: OAuth2 client credentials with an API key (RFC 6749 §4.4), client
// authentication by form fields or HTTP Basic (§2.3.1), the token's shape (§5.1) and its errors'
// (§5.2); the token carries the key's scope, works where a token works, and stops when the key
// is revoked. POST /token's JSON contract is unchanged.
import t, { type Test } from 'tap'
import { Value } from '@sinclair/typebox/value'
import { createDecoder } from 'fast-jwt'
import { OAuthErrorSchema, OAuthTokenSchema } from '../../src/accounts/api-keys.schema.js'
import { build, collection, expectError, feature, session, type TestApp } from '../helper.js'

const ctx = await build(t)
const { app } = ctx
const editor = await session(ctx, 'editor', 'org-a')

async function createKey (bearer: string, body: object = { name: 'oauth', scope: 'write' }, on: TestApp = ctx): Promise<{ id: string, key: string }> {
  const res = await on.app.inject({ method: 'POST', url: '/api-keys', headers: { authorization: `Bearer ${bearer}` }, payload: body })
  if (res.statusCode !== 201) throw new Error(`creating a key: ${res.statusCode} ${res.body}`)
  return res.json() as { id: string, key: string }
}
const FORM = 'application/x-www-form-urlencoded'
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`
const tokenRequest = (body: string, headers: Record<string, string> = {}, on: TestApp = ctx) =>
  on.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': FORM, ...headers }, payload: body })

function expectOAuthError (t: Test, res: { statusCode: number, body: string, headers: Record<string, unknown>, json: () => unknown }, status: number, error: string) {
  t.equal(res.statusCode, status, `${status} ${error}: ${res.body}`)
  const body = res.json() as { error: string, error_description: string }
  t.ok(Value.Check(OAuthErrorSchema, body), 'RFC 6749 error shape')
  t.equal(body.error, error)
  t.match(body.error_description, /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/, 'error_description in RFC 6749\'s characters')
  t.equal(res.headers['cache-control'], 'no-store')
  return body
}

const write = await createKey(editor.token)
const read = await createKey(editor.token, { name: 'read', scope: 'read' })

t.test('client credentials by form fields and by HTTP Basic: a token in RFC 6749\'s shape', async (t) => {
  for (const [how, res] of [
    ['form', await tokenRequest(form({ grant_type: 'client_credentials', client_id: write.id, client_secret: write.key }))],
    ['Basic', await tokenRequest(form({ grant_type: 'client_credentials' }), { authorization: basic(write.id, write.key) })],
    ['Basic and client_id in the body too', await tokenRequest(form({ grant_type: 'client_credentials', client_id: write.id }), { authorization: basic(write.id, write.key) })]
  ] as const) {
    t.equal(res.statusCode, 200, how)
    const body = res.json() as { access_token: string, token_type: string, expires_in: number, scope: string }
    t.ok(Value.Check(OAuthTokenSchema, body), `${how}: matches its schema`)
    t.same([body.token_type, body.expires_in, body.scope], ['Bearer', 3600, 'write'], how)
    t.equal(res.headers['cache-control'], 'no-store', `${how}: not cached (RFC 6749 §5.1)`)
    t.equal(res.headers.pragma, 'no-cache')
    t.match(createDecoder()(body.access_token), { sub: editor.account.id, client_id: write.id, scope: 'write' }, `${how}: the key and its scope in the token`)
  }
})

t.test('the token works where a token works, with the scope granted', async (t) => {
  const token = async (key: { id: string, key: string }, scope?: string) => {
    const res = await tokenRequest(form({ grant_type: 'client_credentials', client_id: key.id, client_secret: key.key, ...(scope !== undefined ? { scope } : {}) }))
    return res.json() as { access_token: string, scope: string }
  }
  const post = (bearer: string, id: string) => app.inject({ method: 'POST', url: '/sources', headers: { authorization: `Bearer ${bearer}` }, payload: collection(feature(id)) })
  const full = await token(write)
  t.equal((await post(full.access_token, 'oauth-1')).statusCode, 201, 'a write key\'s token writes')
  t.equal((await app.inject({ method: 'GET', url: '/collections/sources/items', headers: { authorization: `Bearer ${full.access_token}` } })).statusCode, 200)
  const narrowed = await token(write, 'read')
  t.equal(narrowed.scope, 'read')
  expectError(t, await post(narrowed.access_token, 'oauth-2'), 403, 'FORBIDDEN')
  const readOnly = await token(read)
  t.equal(readOnly.scope, 'read', 'a read key\'s token is read-only')
  expectError(t, await post(readOnly.access_token, 'oauth-3'), 403, 'FORBIDDEN')
  t.equal((await app.inject({ method: 'GET', url: '/collections/sources/items', headers: { authorization: `Bearer ${readOnly.access_token}` } })).statusCode, 200)
  expectError(t, await app.inject({ method: 'POST', url: '/api-keys', headers: { authorization: `Bearer ${full.access_token}` }, payload: { name: 'x', scope: 'read' } }), 403, 'FORBIDDEN')
})

t.test('the token stops working when its key is revoked', async (t) => {
  const key = await createKey(editor.token)
  const { access_token: token } = (await tokenRequest(form({ grant_type: 'client_credentials', client_id: key.id, client_secret: key.key }))).json() as { access_token: string }
  const call = () => app.inject({ method: 'GET', url: '/collections', headers: { authorization: `Bearer ${token}` } })
  t.equal((await call()).statusCode, 200)
  await app.inject({ method: 'DELETE', url: `/api-keys/?id=${key.id}`, headers: editor.headers })
  const res = await call()
  const body = expectError(t, res, 401, 'UNAUTHORIZED')
  t.match(body.message, /issued for has been revoked/)
  t.match(String(res.headers['www-authenticate']), /^Bearer realm="source-registry", error="invalid_token"/)
  expectOAuthError(t, await tokenRequest(form({ grant_type: 'client_credentials', client_id: key.id, client_secret: key.key })), 401, 'invalid_client')
})

t.test('a key that expires sooner than TOKEN_TTL_SECONDS gives a token that expires with it', async (t) => {
  const key = await createKey(editor.token, { name: 'short', scope: 'read', expires_at: new Date(Date.now() + 120_000).toISOString() })
  const body = (await tokenRequest(form({ grant_type: 'client_credentials', client_id: key.id, client_secret: key.key }))).json() as { access_token: string, expires_in: number }
  t.ok(body.expires_in > 100 && body.expires_in <= 120, `expires_in ${body.expires_in}`)
  const claims = createDecoder()(body.access_token) as { exp: number, iat: number }
  t.equal(claims.exp - claims.iat, body.expires_in)
})

t.test('RFC 6749 §5.2 errors', async (t) => {
  const ok = { grant_type: 'client_credentials', client_id: write.id, client_secret: write.key }
  expectOAuthError(t, await tokenRequest(form({ ...ok, grant_type: 'password' })), 400, 'unsupported_grant_type')
  expectOAuthError(t, await tokenRequest(form({ client_id: write.id, client_secret: write.key })), 400, 'invalid_request')
  expectOAuthError(t, await tokenRequest(`${form(ok)}&grant_type=client_credentials`), 400, 'invalid_request')
  expectOAuthError(t, await tokenRequest(form(ok), { authorization: basic(write.id, write.key) }), 400, 'invalid_request')
  expectOAuthError(t, await tokenRequest(form({ grant_type: 'client_credentials', client_id: read.id }), { authorization: basic(write.id, write.key) }), 400, 'invalid_request')
  expectOAuthError(t, await app.inject({ method: 'POST', url: '/oauth/token', payload: ok }), 400, 'invalid_request')
  expectOAuthError(t, await app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'text/plain' }, payload: form(ok) }), 400, 'invalid_request')
  expectOAuthError(t, await app.inject({ method: 'POST', url: '/oauth/token' }), 400, 'invalid_request')
  expectOAuthError(t, await tokenRequest(form({ ...ok, scope: 'admin' })), 400, 'invalid_scope')
  expectOAuthError(t, await tokenRequest(form({ grant_type: 'client_credentials', client_id: read.id, client_secret: read.key, scope: 'write' })), 400, 'invalid_scope')

  for (const [name, res] of [
    ['no client authentication', await tokenRequest(form({ grant_type: 'client_credentials' }))],
    ['wrong secret (form)', await tokenRequest(form({ ...ok, client_secret: `srk_${write.id}_${'x'.repeat(43)}` }))],
    ['wrong secret (Basic)', await tokenRequest(form({ grant_type: 'client_credentials' }), { authorization: basic(write.id, `srk_${write.id}_${'x'.repeat(43)}`) })],
    ['not a key', await tokenRequest(form({ ...ok, client_secret: editor.account.password }))],
    ['client_id of another key', await tokenRequest(form({ ...ok, client_id: read.id }))]
  ] as const) {
    const body = expectOAuthError(t, res, 401, 'invalid_client')
    t.ok(body.error_description.length > 0, name)
    t.match(String(res.headers['www-authenticate']), /Basic realm="source-registry"/, `${name}: WWW-Authenticate offers Basic`)
  }
})

t.test('POST /token is unchanged: JSON e-mail and password; a form there is a 415', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/token', payload: { email: editor.account.email, password: editor.account.password } })
  t.equal(res.statusCode, 200)
  t.same(Object.keys(res.json() as object).sort(), ['expires_in', 'token'])
  expectError(t, await app.inject({ method: 'POST', url: '/token', headers: { 'content-type': FORM }, payload: form({ grant_type: 'client_credentials' }) }), 415, 'UNSUPPORTED_MEDIA_TYPE')
  expectError(t, await app.inject({ method: 'POST', url: '/sources', headers: { ...editor.headers, 'content-type': FORM }, payload: 'a=b' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
})
