// POST /token: tokens and their claims, 400 for missing fields, one 401 for every wrong
// credential, the brute-force 429.
import t, { type Test } from 'tap'
import { Value } from '@sinclair/typebox/value'
import { createDecoder } from 'fast-jwt'
import { ErrorSchema } from '../../src/errors.js'
import { TokenSchema } from '../../src/accounts/token.routes.js'
import { setAccountDisabled } from '../../src/accounts/accounts.repository.js'
import { addAccount, build, PASSWORD } from '../helper.js'

const ctx = await build(t, { TOKEN_TTL_SECONDS: 900, LOGIN_MAX_FAILURES: 3 })
const { app, db } = ctx
const token = (payload: unknown, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url: '/token', payload: payload as object, headers })
const decode = createDecoder()

t.test('200 with token and expires_in; claims sub, org, role, iat, exp, iss, aud', async (t) => {
  const account = await addAccount(db, { role: 'editor', organisation: 'org-x', email: 'Alice@Example.org' })
  for (const email of ['Alice@Example.org', 'alice@example.org', 'ALICE@EXAMPLE.ORG']) {
    const res = await token({ email, password: PASSWORD })
    t.equal(res.statusCode, 200, email)
    const body = res.json()
    t.ok(Value.Check(TokenSchema, body))
    t.equal(body.expires_in, 900)
    const claims = decode(body.token)
    t.match(claims, { sub: account.id, org: 'org-x', role: 'editor', iss: 'source-registry', aud: 'source-registry' })
    t.equal(claims.exp - claims.iat, 900)
    t.equal(JSON.parse(Buffer.from(body.token.split('.')[0], 'base64url').toString()).alg, 'HS256')
  }
})

t.test('400 for a missing or mistyped email or password', async (t) => {
  for (const payload of [{}, { email: 'a@b.c' }, { password: 'x' }, { email: 1, password: 'x' }, { email: 'a@b.c', password: null }, { email: '', password: 'x' }]) {
    const res = await token(payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.ok(Value.Check(ErrorSchema, res.json()))
    t.equal(res.json().code, 'VALIDATION_FAILED')
  }
  t.match((await token({ email: 'a@b.c' })).json().details, [{ pointer: '/password', message: 'is required' }])
  t.equal((await app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a&password=b' })).statusCode, 415)
})

t.test('401 with one message for a wrong password, an unknown e-mail and a disabled account', async (t) => {
  const a = await addAccount(db, { email: 'bob@example.org' })
  const d = await addAccount(db, { email: 'carol@example.org' })
  await setAccountDisabled(db, d.email, true)
  const messages = new Set<string>()
  for (const payload of [{ email: a.email, password: 'wrong password!' }, { email: 'nobody@example.org', password: PASSWORD }, { email: d.email, password: PASSWORD }]) {
    const res = await token(payload, { 'x-forwarded-for': 'ignored' })
    t.equal(res.statusCode, 401)
    t.equal(res.json().code, 'INVALID_CREDENTIALS')
    t.match(res.headers['www-authenticate'], /^Bearer/)
    messages.add(res.json().message)
  }
  t.equal(messages.size, 1, 'the same message whatever was wrong')
})

t.test('429 with Retry-After after LOGIN_MAX_FAILURES failures for one e-mail, even with the right password', async (t) => {
  const throttled = await buildThrottled(t)
  const victim = await addAccount(throttled.db, { email: 'dave@example.org' })
  for (let i = 0; i < 3; i++) t.equal((await throttled.app.inject({ method: 'POST', url: '/token', payload: { email: victim.email, password: `guess ${i} wrong` } })).statusCode, 401)
  const res = await throttled.app.inject({ method: 'POST', url: '/token', payload: { email: victim.email, password: PASSWORD } })
  t.equal(res.statusCode, 429)
  t.equal(res.json().code, 'TOO_MANY_REQUESTS')
  const retry = Number(res.headers['retry-after'])
  t.ok(retry > 0 && retry <= 60, `Retry-After ${retry}`)
})

t.test('429 per client address across e-mails', async (t) => {
  const throttled = await buildThrottled(t)
  for (let i = 0; i < 3; i++) t.equal((await throttled.app.inject({ method: 'POST', url: '/token', payload: { email: `nobody${i}@example.org`, password: 'x' } })).statusCode, 401)
  const res = await throttled.app.inject({ method: 'POST', url: '/token', payload: { email: 'someone-else@example.org', password: 'x' } })
  t.equal(res.statusCode, 429)
  t.ok(Number(res.headers['retry-after']) > 0)
})

async function buildThrottled (t: Test) {
  return build(t, { LOGIN_MAX_FAILURES: 3, LOGIN_FAILURE_WINDOW_SECONDS: 60 })
}
