// The database going away: requests get 503 with Retry-After (never a 500), /ready says so, and
// the service recovers by itself when the database is back. A TCP proxy in front of the real
// PostGIS plays the outage.
import t from 'tap'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { Value } from '@sinclair/typebox/value'
import { ErrorSchema } from '../../src/errors.js'
import { backend, build, collection, createDatabase, feature, session } from '../helper.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only: the embedded database is in-process and cannot become unreachable')
} else {
  await outage()
}

async function outage (): Promise<void> {

const target = new URL(await createDatabase(t))
const sockets = new Set<Socket>()
let proxy: Server | undefined

async function up (port = 0): Promise<number> {
  proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    sockets.add(client).add(upstream)
    client.pipe(upstream).pipe(client)
    const drop = () => { client.destroy(); upstream.destroy() }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve) => proxy?.listen(port, '127.0.0.1', resolve))
  const address = proxy.address()
  return typeof address === 'object' && address !== null ? address.port : 0
}

async function down (): Promise<void> {
  for (const s of sockets) s.destroy()
  sockets.clear()
  await new Promise<void>((resolve) => proxy?.close(() => resolve()))
}

const port = await up()
t.teardown(down)
const viaProxy = new URL(target)
viaProxy.port = String(port)
const ctx = await build(t, { ACCOUNT_CACHE_TTL_SECONDS: 30 }, { url: viaProxy.toString() })
const { app } = ctx
const editor = await session(ctx, 'editor', 'org-a')
const created = await app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('before-outage')) })
t.equal(created.statusCode, 201)
const id = created.json().id

t.test('database down: 503 with Retry-After on every endpoint, /ready 503, /health 200', async (t) => {
  await down()
  const calls = [
    app.inject({ method: 'GET', url: `/sources/?id=${id}`, headers: editor.headers }),
    app.inject({ method: 'POST', url: '/sources', headers: editor.headers, payload: collection(feature('during-outage')) }),
    app.inject({ method: 'DELETE', url: `/sources/?id=${id}`, headers: editor.headers }),
    app.inject({ method: 'POST', url: '/token', payload: { email: editor.account.email, password: editor.account.password } }),
    app.inject({ method: 'GET', url: '/ready' })
  ]
  for (const res of await Promise.all(calls)) {
    t.equal(res.statusCode, 503, res.body)
    t.ok(Value.Check(ErrorSchema, res.json()))
    t.equal(res.json().code, 'SERVICE_UNAVAILABLE')
    t.equal(res.headers['retry-after'], '5')
    t.notMatch(res.body, /ECONNREFUSED|127\.0\.0\.1|at .*\.js/, 'no internals leak')
  }
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
})

t.test('database back: the same app answers again without a restart', async (t) => {
  await up(port)
  const res = await app.inject({ method: 'GET', url: `/sources/?id=${id}`, headers: editor.headers })
  t.equal(res.statusCode, 200, res.body)
  t.equal((await app.inject({ method: 'GET', url: '/ready' })).statusCode, 200)
})
}
