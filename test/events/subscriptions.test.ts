// /subscriptions: create (secret once), list, delete, roles and organisations, the per-organisation
// limit, and SSRF: URLs that are not https or that name loopback, private, link-local or metadata
// addresses are a 400 at creation, decided from the address alone (no traffic is ever sent).
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { CreatedSubscriptionSchema, SubscriptionListSchema } from '../../src/events/events.schema.js'
import { refusedAddress } from '../../src/events/webhook-address.js'
import { backoffMs } from '../../src/events/deliverer.js'
import { build, expectError, session } from '../helper.js'

const ctx = await build(t, { WEBHOOK_MAX_PER_ORG: 3 })
const { app } = ctx
const editorA = await session(ctx, 'editor', 'org-a')
const viewerA = await session(ctx, 'viewer', 'org-a')
const editorB = await session(ctx, 'editor', 'org-b')
const admin = await session(ctx, 'admin', 'hq')

// A public address (TEST-NET would be refused): no request is ever sent to it by these tests, as
// nothing is delivered while no event matches in time, and the subscriptions are deleted.
const PUBLIC_URL = 'https://93.184.215.14/hook'
const post = (headers: Record<string, string>, payload: unknown) => app.inject({ method: 'POST', url: '/subscriptions', headers, payload: payload as object })

t.test('SSRF: loopback, private, link-local, metadata and local names are refused with a clear 400', async (t) => {
  for (const url of ['https://127.0.0.1/hook', 'https://[::1]/hook', 'https://10.0.0.1/hook', 'https://169.254.169.254/latest/meta-data', 'https://localhost/hook',
    'https://[::ffff:127.0.0.1]/', 'https://172.16.5.4/', 'https://192.168.1.1/', 'https://100.100.100.200/', 'https://[fe80::1]/', 'https://[fd00:ec2::254]/',
    'https://0.0.0.0/', 'https://2130706433/', 'https://metadata.google.internal/', 'http://93.184.215.14/hook', 'ftp://93.184.215.14/', 'not a url', 'https://user:pw@93.184.215.14/']) {
    const res = await post(editorA.headers, { url, types: ['conflict.started'] })
    const body = expectError(t, res, 400, 'WEBHOOK_URL_REFUSED')
    t.equal(body.details?.[0]?.pointer, '/url', url)
    t.match(body.message, /webhook URL/, url)
    // What WEBHOOK_ALLOW_PRIVATE would allow says so; what it would not (ftp, credentials, no URL) does not.
    const allowable = !/^(ftp:|not a url|https:\/\/user:)/.test(url)
    t.equal(/An operator can allow http and private addresses \(development and tests only\) by starting the service with WEBHOOK_ALLOW_PRIVATE=true\.$/.test(body.message), allowable, `${url}: ${body.message}`)
  }
  t.equal(refusedAddress('8.8.8.8'), undefined, 'a public address is allowed')
  t.equal(refusedAddress('2606:4700::1111'), undefined)
  t.type(refusedAddress('::ffff:7f00:1'), 'string', 'IPv4-mapped loopback in hex')
})

t.test('create, list, delete; the secret shown once; roles and organisations', async (t) => {
  const res = await post(editorA.headers, { url: PUBLIC_URL, types: ['conflict.started', 'conflict.ended'] })
  t.equal(res.statusCode, 201, res.body)
  const created = res.json()
  t.ok(Value.Check(CreatedSubscriptionSchema, created))
  t.match(created, { organisation: 'org-a', status: 'active', failures: 0, secret: /^whsec_/ })
  const listed = (await app.inject({ method: 'GET', url: '/subscriptions', headers: viewerA.headers })).json()
  t.ok(Value.Check(SubscriptionListSchema, listed))
  t.same(listed.subscriptions.map((s: { id: string }) => s.id), [created.id], 'a viewer of the organisation lists it')
  t.notOk('secret' in listed.subscriptions[0], 'never the secret again')
  t.same((await app.inject({ method: 'GET', url: '/subscriptions', headers: editorB.headers })).json().subscriptions, [], 'another organisation sees none')
  t.equal((await app.inject({ method: 'GET', url: '/subscriptions', headers: admin.headers })).json().subscriptions.length, 1, 'an admin sees all')
  expectError(t, await app.inject({ method: 'GET', url: '/subscriptions?organisation=org-a', headers: editorB.headers }), 403, 'FORBIDDEN')

  expectError(t, await post(viewerA.headers, { url: PUBLIC_URL, types: ['source.created'] }), 403, 'FORBIDDEN')
  expectError(t, await post(editorB.headers, { url: PUBLIC_URL, types: ['source.created'], organisation: 'org-a' }), 403, 'FORBIDDEN')
  expectError(t, await post(editorA.headers, { url: PUBLIC_URL, types: [] }), 400, 'VALIDATION_FAILED')
  expectError(t, await post(editorA.headers, { url: PUBLIC_URL, types: ['source.exploded'] }), 400, 'VALIDATION_FAILED')

  const deliveries = await app.inject({ method: 'GET', url: `/subscriptions/deliveries?id=${created.id}`, headers: viewerA.headers })
  t.equal(deliveries.statusCode, 200)
  t.same(deliveries.json(), { deliveries: [] })
  expectError(t, await app.inject({ method: 'GET', url: `/subscriptions/deliveries?id=${created.id}`, headers: editorB.headers }), 404, 'NOT_FOUND')

  expectError(t, await app.inject({ method: 'DELETE', url: `/subscriptions/?id=${created.id}`, headers: editorB.headers }), 404, 'NOT_FOUND')
  expectError(t, await app.inject({ method: 'DELETE', url: `/subscriptions/?id=${created.id}`, headers: viewerA.headers }), 403, 'FORBIDDEN')
  const del = await app.inject({ method: 'DELETE', url: `/subscriptions/?id=${created.id}`, headers: editorA.headers })
  t.equal(del.statusCode, 200)
  expectError(t, await app.inject({ method: 'DELETE', url: `/subscriptions/?id=${created.id}`, headers: editorA.headers }), 404, 'NOT_FOUND')
  expectError(t, await app.inject({ method: 'DELETE', url: '/subscriptions/?id=nope', headers: editorA.headers }), 400, 'VALIDATION_FAILED')
})

t.test('an organisation holds at most WEBHOOK_MAX_PER_ORG subscriptions: 409 beyond', async (t) => {
  const ids: string[] = []
  for (let i = 0; i < 3; i++) {
    const res = await post(editorB.headers, { url: `${PUBLIC_URL}/${i}`, types: ['source.deleted'] })
    t.equal(res.statusCode, 201)
    ids.push(res.json().id)
  }
  expectError(t, await post(editorB.headers, { url: PUBLIC_URL, types: ['source.deleted'] }), 409, 'SUBSCRIPTION_LIMIT')
  for (const id of ids) await app.inject({ method: 'DELETE', url: `/subscriptions/?id=${id}`, headers: editorB.headers })
})

t.test('U+0000 anywhere is a 400, never a 500', async (t) => {
  expectError(t, await post(admin.headers, { url: PUBLIC_URL, types: ['source.created'], organisation: 'a\u0000b' }), 400, 'VALIDATION_FAILED')
  expectError(t, await post(editorA.headers, { url: `${PUBLIC_URL}\u0000`, types: ['source.created'] }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: '/subscriptions?organisation=%00', headers: admin.headers }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: '/events?organisation=%00', headers: admin.headers }), 400, 'VALIDATION_FAILED')
  expectError(t, await app.inject({ method: 'GET', url: '/events?after=%00', headers: admin.headers }), 400, 'INVALID_CURSOR')
})

t.test('backoff: doubling from the base, jittered in its upper half, at most an hour', async (t) => {
  t.equal(backoffMs(1, 1000, () => 0), 500)
  t.equal(backoffMs(1, 1000, () => 1), 1000)
  t.equal(backoffMs(4, 1000, () => 1), 8000)
  t.equal(backoffMs(40, 1000, () => 1), 3_600_000)
})
