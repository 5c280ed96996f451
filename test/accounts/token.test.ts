// POST /token: tokens and their claims, 400 for missing fields, one 401 for every wrong
// credential, the brute-force 429.
import t, { type Test } from 'tap'
import { Value } from '@sinclair/typebox/value'
import { createDecoder } from 'fast-jwt'
import { ErrorSchema } from '../../src/errors.js'
import { TokenSchema } from '../../src/accounts/token.routes.js'
import { setAccountDisabled } from '../../src/accounts/accounts.repository.js'
import { unlock } from '../../src/accounts/login-failures.repository.js'
import { addAccount, build, PASSWORD, type TestApp } from '../helper.js'

const ctx = await build(t, { TOKEN_TTL_SECONDS: 900 })
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
  const form = await app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a&password=b' })
  t.equal(form.statusCode, 415)
  t.equal(form.json().message, 'Unsupported Content-Type "application/x-www-form-urlencoded": send application/json.', 'the one accepted media type is named')
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

const from = (app: TestApp['app'], address: string, email: string, password: string) =>
  app.inject({ method: 'POST', url: '/token', payload: { email, password }, remoteAddress: address })

t.test('(address, e-mail) pair: 429 with Retry-After after LOGIN_MAX_FAILURES, even with the right password; the owner elsewhere gets in', async (t) => {
  const throttled = await buildThrottled(t)
  const victim = await addAccount(throttled.db, { email: 'dave@example.org' })
  for (let i = 0; i < 3; i++) t.equal((await from(throttled.app, '192.0.2.1', victim.email, `guess ${i} wrong`)).statusCode, 401)
  const res = await from(throttled.app, '192.0.2.1', victim.email, PASSWORD)
  t.equal(res.statusCode, 429)
  t.equal(res.json().code, 'TOO_MANY_REQUESTS')
  const retry = Number(res.headers['retry-after'])
  t.ok(retry > 0 && retry <= 60, `Retry-After ${retry}`)
  t.equal((await from(throttled.app, '198.51.100.7', 'DAVE@example.org', PASSWORD)).statusCode, 200, 'the owner from another address is not locked out')
})

t.test('a successful login clears its own pair\'s failures', async (t) => {
  // The address limit out of the way: only the pair's count is under test.
  const throttled = await build(t, { ...throttledConfig, LOGIN_ADDRESS_MAX_FAILURES: 100 })
  const user = await addAccount(throttled.db, { email: 'heidi@example.org' })
  for (let i = 0; i < 2; i++) t.equal((await from(throttled.app, '192.0.2.5', user.email, 'wrong')).statusCode, 401)
  t.equal((await from(throttled.app, '192.0.2.5', user.email, PASSWORD)).statusCode, 200)
  for (let i = 0; i < 2; i++) t.equal((await from(throttled.app, '192.0.2.5', user.email, 'wrong')).statusCode, 401)
  t.equal((await from(throttled.app, '192.0.2.5', user.email, PASSWORD)).statusCode, 200, '2 failures since the success: under the pair limit of 3')
})

t.test('address: 429 across e-mails after LOGIN_ADDRESS_MAX_FAILURES; other addresses unaffected', async (t) => {
  const throttled = await buildThrottled(t)
  const someone = await addAccount(throttled.db, { email: 'erin@example.org' })
  for (let i = 0; i < 4; i++) t.equal((await from(throttled.app, '192.0.2.2', `nobody${i}@example.org`, 'x')).statusCode, 401)
  const res = await from(throttled.app, '192.0.2.2', someone.email, PASSWORD)
  t.equal(res.statusCode, 429)
  t.match(res.json().message, /from your address/)
  t.ok(Number(res.headers['retry-after']) > 0)
  t.equal((await from(throttled.app, '192.0.2.3', someone.email, PASSWORD)).statusCode, 200)
})

t.test('e-mail: failures from many addresses slow its logins, never refuse them', async (t) => {
  const throttled = await buildThrottled(t)
  const victim = await addAccount(throttled.db, { email: 'frank@example.org' })
  for (let i = 0; i < 6; i++) t.equal((await from(throttled.app, `203.0.113.${i}`, victim.email, 'wrong guess')).statusCode, 401, `attempt ${i}`)
  const started = Date.now()
  const res = await from(throttled.app, '203.0.113.200', victim.email, PASSWORD)
  const waited = Date.now() - started
  t.equal(res.statusCode, 200, 'the right password still gets in')
  t.ok(waited >= 400, `slowed by the capped delay (waited ${waited} ms)`)
})

t.test('the counts survive a restart and are shared by every instance on the database; ops can clear them', async (t) => {
  const first = await buildThrottled(t)
  const victim = await addAccount(first.db, { email: 'grace@example.org' })
  for (let i = 0; i < 3; i++) await from(first.app, '192.0.2.9', victim.email, 'wrong')
  await first.app.close()
  const second = await build(t, throttledConfig, { url: first.url })
  t.equal((await from(second.app, '192.0.2.9', victim.email, PASSWORD)).statusCode, 429, 'still refused after a restart')
  t.equal(await unlock(second.db, { email: 'Grace@Example.org' }), 2, 'the pair and the e-mail counts removed')
  t.equal((await from(second.app, '192.0.2.9', victim.email, PASSWORD)).statusCode, 200, 'unlocked')
})

// Pair 3, address 4, e-mail slowed from 3 failures on, by at most 400 ms.
const throttledConfig = { LOGIN_MAX_FAILURES: 3, LOGIN_ADDRESS_MAX_FAILURES: 4, LOGIN_EMAIL_SLOWDOWN_AFTER: 3, LOGIN_EMAIL_MAX_DELAY_MS: 400, LOGIN_FAILURE_WINDOW_SECONDS: 60 }
async function buildThrottled (t: Test) {
  return build(t, throttledConfig)
}
