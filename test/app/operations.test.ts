// What ops see of the running service, as ops start it (node dist/main.cjs in its own process):
// request ids on every response, 4xx logged with their code and account, no client data of a
// database error in the log, a "closed" line with the drain time on SIGTERM, and progress lines
// and a structured admin line on an embedded first start.
import t from 'tap'
import { errorSerializer } from '../../src/log.js'
import { openDatabase } from '../../src/db/open.js'
import { addAccount, backend, build, createDatabase, startService, targetConfig } from '../helper.js'

t.test('x-request-id on every response; a well-formed client id is kept, another is replaced', async (t) => {
  const { app } = await build(t)
  for (const [url, status] of [['/health', 200], ['/sources/?id=src_aaaaaaaaaaaaaaaaaaaaaa', 401], ['/nowhere', 404]] as const) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, status)
    t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/, `${url}: a generated id`)
  }
  const own = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'client-42.retry:1' } })
  t.equal(own.headers['x-request-id'], 'client-42.retry:1')
  const bad = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'has spaces and "quotes"' } })
  t.match(bad.headers['x-request-id'], /^[0-9a-f-]{36}$/)
})

t.test('database errors are logged without fields that may carry client data, except at debug', async (t) => {
  const err = Object.assign(new Error('duplicate key value violates unique constraint "x"'), {
    severity: 'ERROR', code: '23505', constraint: 'x', detail: 'Key (feature_id)=(secret-client-id) already exists.',
    where: 'SQL statement "INSERT INTO sources VALUES ($1)" with parameters $1 = \'secret\'', internalQuery: 'SELECT secret'
  })
  const quiet = errorSerializer(false)(err)
  t.match(quiet, { message: /duplicate key/, code: '23505', constraint: 'x', severity: 'ERROR' })
  t.notMatch(JSON.stringify(quiet), /secret/, 'no detail, where or internal query')
  t.match(errorSerializer(true)(err), { detail: /secret-client-id/, where: /parameters/ }, 'all of it at debug')
  t.match(errorSerializer(false)(new TypeError('plain')), { type: 'TypeError', message: 'plain' }, 'other errors as pino writes them')
})

t.test('4xx logged with code and account id, never the token; SIGTERM drains and logs "closed"', async (t) => {
  const target = await createDatabase(t)
  const { db: setup } = await openDatabase(targetConfig(target), { poolMax: 1 })
  const viewer = await addAccount(setup, { role: 'viewer' })
  await setup.destroy()
  const service = await startService(t, target)
  const login = await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: viewer.email, password: viewer.password }) })
  const { token } = await login.json() as { token: string }
  const forbidden = await fetch(`${service.base}/sources`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' })
  t.equal(forbidden.status, 403)
  const line = JSON.parse(await service.waitFor(/"code":"FORBIDDEN"/)) as Record<string, unknown>
  t.match(line, { level: 30, status: 403, code: 'FORBIDDEN', accountId: viewer.id, reqId: forbidden.headers.get('x-request-id') })
  t.notOk(service.lines.some((l) => l.includes(token)), 'the token is in no log line')

  service.child.kill('SIGTERM')
  const code = await new Promise<number | null>((resolve) => service.child.once('exit', (c) => resolve(c)))
  t.equal(code, 0, 'exits 0')
  const closed = JSON.parse(await service.waitFor(/"msg":"closed"/)) as { drainMs: number, signal: string }
  t.equal(closed.signal, 'SIGTERM')
  t.type(closed.drainMs, 'number')
})

t.test('embedded first start: progress lines, a structured admin line without the password, the banner once', { skip: backend === 'server' ? 'embedded backend only' : false }, async (t) => {
  const dir = await createDatabase(t, { empty: true })
  const service = await startService(t, dir, { JWT_SECRET: '' })
  const json = service.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string, email?: string })
  const messages = json.map((l) => l.msg)
  t.ok(messages.some((m) => /creating the database \(first start/.test(m)), 'says it is creating the database')
  t.ok(messages.some((m) => /copied the migrated template/.test(m)), 'from the template made at install (npm ci runs prepare)')
  t.match(json.find((l) => /^using the embedded PostGIS/.test(l.msg)), { fromTemplate: true, migrationsApplied: [] }, 'with nothing left to apply')
  const admin = json.find((l) => /created an admin account/.test(l.msg))
  t.match(admin, { email: 'admin@localhost', role: 'admin' })
  const password = /password: (\S+)/.exec(service.lines.join('\n'))?.[1]
  t.ok(password, 'the banner shows the password once')
  t.notOk(service.lines.some((l) => l.startsWith('{') && l.includes(password as string)), 'no JSON log line carries it')
})
