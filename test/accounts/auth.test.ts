// Bearer authentication on the protected endpoints: every way a token can be wrong is a 401
// with WWW-Authenticate; disabled accounts and changed passwords end their tokens.
import t from 'tap'
import { createSigner } from 'fast-jwt'
import { setAccountDisabled, setAccountPassword } from '../../src/accounts/accounts.repository.js'
import { hashPassword } from '../../src/accounts/passwords.js'
import { addAccount, build, login, TEST_SECRET } from '../helper.js'

const ctx = await build(t)
const { app, db } = ctx
const account = await addAccount(db, { role: 'viewer', organisation: 'org-a' })
const good = await login(app, account.email)
const unknownId = 'src_0000000000000000000000'

const call = (authorization?: string) => app.inject({ method: 'GET', url: `/sources/?id=${unknownId}`, headers: authorization === undefined ? {} : { authorization } })

const claims = { sub: account.id, org: 'org-a', role: 'viewer', iss: 'source-registry', aud: 'source-registry' }

t.test('a valid token passes (404 for the unknown id), in every accepted header shape', async (t) => {
  for (const header of [`Bearer ${good}`, `bearer ${good}`, `BEARER  ${good}`, good]) {
    t.equal((await call(header)).statusCode, 404, header.slice(0, 10))
  }
})

t.test('authenticated answers, refusals included: Cache-Control private, no-cache and Vary: Authorization; public ones are left alone', async (t) => {
  const [items, wrong, missing] = await Promise.all([
    app.inject({ method: 'GET', url: '/collections/sources/items', headers: { authorization: `Bearer ${good}` } }),
    app.inject({ method: 'GET', url: '/collections/sources/items', headers: { authorization: 'Bearer srk_wrong' } }),
    app.inject({ method: 'GET', url: '/collections/sources' })
  ])
  for (const [name, res, status] of [['items', items, 200], ['a wrong key', wrong, 401], ['no credentials', missing, 401], ['a 404', await call(`Bearer ${good}`), 404]] as const) {
    t.equal(res.statusCode, status, name)
    t.match(res.headers, { 'cache-control': 'private, no-cache', vary: 'Authorization' }, name)
  }
  const landing = await app.inject({ method: 'GET', url: '/' })
  t.notMatch(String(landing.headers['cache-control']), /private/, 'the public landing page: no such policy')
})

t.test('401 with WWW-Authenticate and advice for every bad token', async (t) => {
  const sign = (opts: object, payload: object = claims) => createSigner({ key: TEST_SECRET, ...opts })(payload)
  const cases: Array<[string, string | undefined, RegExp]> = [
    ['missing', undefined, /Missing Authorization/],
    ['empty', '', /Missing Authorization/],
    ['Basic with a password, not an API key', 'Basic dXNlcjpwYXNz', /not the account's password/],
    ['another scheme', 'Digest username="user"', /Malformed/],
    ['garbage', 'Bearer not-a-token', /invalid/],
    ['wrong signature', `Bearer ${createSigner({ key: 'another-secret-that-is-32-bytes-long!!' })(claims)}`, /invalid/],
    ['alg none', `Bearer ${createSigner({ algorithm: 'none' })(claims)}`, /invalid/],
    ['HS512', `Bearer ${sign({ algorithm: 'HS512' })}`, /invalid/],
    ['expired', `Bearer ${sign({ expiresIn: 1, clockTimestamp: Date.now() - 60_000 })}`, /expired/],
    ['no exp', `Bearer ${sign({})}`, /invalid/],
    ['wrong audience', `Bearer ${sign({ expiresIn: 60_000 }, { ...claims, aud: 'someone-else' })}`, /invalid/],
    ['wrong issuer', `Bearer ${sign({ expiresIn: 60_000 }, { ...claims, iss: 'someone-else' })}`, /invalid/],
    ['truncated', `Bearer ${good.slice(0, -5)}`, /invalid/]
  ]
  for (const [name, header, message] of cases) {
    const res = await call(header)
    t.equal(res.statusCode, 401, name)
    t.match(res.json(), { status: 401, code: 'UNAUTHORIZED', message }, name)
    t.match(res.json().message, /POST \/token/, `${name}: says what to do`)
    t.match(res.headers['www-authenticate'], /^Bearer realm="source-registry"/, name)
  }
})

t.test('the verified-token cache: each token is its own key, a refusal stays a refusal, a token stops at its exp', async (t) => {
  const sign = (key: string, payload: object) => createSigner({ key, expiresIn: 60_000 })(payload)
  const long = sign(TEST_SECRET, { ...claims, pad: 'x'.repeat(2_000) })
  const forgedLong = sign('another-secret-that-is-32-bytes-long!!', { ...claims, pad: 'x'.repeat(2_000) })
  const lastSignatureChar = good.at(-2) === 'A' ? 'B' : 'A'
  const altered = `${good.slice(0, -2)}${lastSignatureChar}${good.at(-1) as string}`
  // Each signature check, by token: a hit of the cache makes none.
  const checks = new Map<string, number>()
  const original = app.jwt.verify
  app.jwt.verify = ((token: string, ...rest: unknown[]) => {
    checks.set(token, (checks.get(token) ?? 0) + 1)
    return (original as (...args: unknown[]) => unknown).call(app.jwt, token, ...rest)
  }) as typeof original
  t.teardown(() => { app.jwt.verify = original })
  for (let round = 1; round <= 2; round++) {
    t.equal((await call(`Bearer ${good}`)).statusCode, 404, `round ${round}: the good token`)
    t.equal((await call(`Bearer ${altered}`)).statusCode, 401, `round ${round}: the good token with its signature changed`)
    t.equal((await call(`Bearer ${long}`)).statusCode, 404, `round ${round}: a long token the service's key signed`)
    t.equal((await call(`Bearer ${forgedLong}`)).statusCode, 401, `round ${round}: the same claims signed with another key`)
  }
  t.equal(checks.get(long), 1, 'a good token is checked once, then found in the cache')
  t.ok((checks.get(good) ?? 0) <= 1, 'so is the one signed in with (perhaps cached by the tests before)')
  t.equal(checks.get(altered), 2, 'a refused token is checked every time')
  t.equal(checks.get(forgedLong), 2, 'a forged long one too')
  const exp = Math.floor(Date.now() / 1000) + 3
  const shortLived = createSigner({ key: TEST_SECRET })({ ...claims, iat: exp - 3, exp })
  t.equal((await call(`Bearer ${shortLived}`)).statusCode, 404, 'a token valid for a few more seconds passes (and is cached)')
  t.equal((await call(`Bearer ${shortLived}`)).statusCode, 404, 'and passes again')
  t.equal(checks.get(shortLived), 1, 'from the cache')
  await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 50))
  const late = await call(`Bearer ${shortLived}`)
  t.equal(late.statusCode, 401, 'after its exp it is refused, cached or not')
  t.match(late.json().message, /expired/)
})

t.test('a disabled account\'s tokens stop working; enabling restores them', async (t) => {
  const other = await addAccount(db, { role: 'viewer' })
  const token = await login(app, other.email)
  t.equal((await call(`Bearer ${token}`)).statusCode, 404)
  await setAccountDisabled(db, other.email, true)
  const res = await call(`Bearer ${token}`)
  t.equal(res.statusCode, 401)
  t.match(res.json().message, /disabled/)
  await setAccountDisabled(db, other.email, false)
  t.equal((await call(`Bearer ${token}`)).statusCode, 404)
})

t.test('with the account cache, a disabled account is refused once the TTL has passed', async (t) => {
  // A TTL long enough that the second call is surely inside it on a loaded machine.
  const cached = await build(t, { ACCOUNT_CACHE_TTL_SECONDS: 4 })
  const other = await addAccount(cached.db, { role: 'viewer' })
  const token = await login(cached.app, other.email)
  const callCached = () => cached.app.inject({ method: 'GET', url: `/sources/?id=${unknownId}`, headers: { authorization: `Bearer ${token}` } })
  t.equal((await callCached()).statusCode, 404)
  await setAccountDisabled(cached.db, other.email, true)
  t.equal((await callCached()).statusCode, 404, 'still cached: no database read on this request')
  await new Promise((resolve) => setTimeout(resolve, 4100))
  t.equal((await callCached()).statusCode, 401, 'refused after the TTL')
})

t.test('changing the password ends older tokens', async (t) => {
  const other = await addAccount(db, { role: 'viewer' })
  const token = await login(app, other.email)
  // iat has one-second resolution: make sure the change is in a later second than the token.
  await new Promise((resolve) => setTimeout(resolve, 1100))
  await setAccountPassword(db, other.email, await hashPassword('a brand new password'))
  const res = await call(`Bearer ${token}`)
  t.equal(res.statusCode, 401)
  t.match(res.json().message, /password changed/)
  t.equal((await call(`Bearer ${await login(app, other.email, 'a brand new password')}`)).statusCode, 404)
})
