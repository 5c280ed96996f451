// libpq's multi-host connection strings (src/connection-string.ts), and on the server backend the
// failover pool over them (src/db/failover-pool.ts): hosts tried in order, the first that fits
// target_session_attrs served, none fitting a 503-class error; the config accepts both forms.
import t from 'tap'
import { sql } from 'kysely'
import { isPlain, parseTargets, splitConnectionList } from '../../src/connection-string.js'
import { loadConfig } from '../../src/config.js'
import { classifyDbError } from '../../src/db/errors.js'
import { connect, failoverOf, redactUrl } from '../../src/db/connect.js'
import { backend, createDatabase } from '../helper.js'

t.test('the URL form: one single-host URL per host, in order, parameters kept', async (t) => {
  const targets = parseTargets('postgres://u:p%40ss@a:5432,b:5433,[::1]:6/db?sslmode=disable&target_session_attrs=read-write')
  t.equal(targets.targetSessionAttrs, 'read-write')
  t.same(targets.hosts, [
    { name: 'a:5432', url: 'postgres://u:p%40ss@a:5432/db?sslmode=disable' },
    { name: 'b:5433', url: 'postgres://u:p%40ss@b:5433/db?sslmode=disable' },
    { name: '[::1]:6', url: 'postgres://u:p%40ss@[::1]:6/db?sslmode=disable' }
  ])
  t.ok(isPlain(parseTargets('postgres://u@a/db')), 'one host without target_session_attrs: pg reads it as it is')
  t.notOk(isPlain(parseTargets('postgres://u@a/db?target_session_attrs=primary')), 'one host that must be a primary: checked')
})

t.test('the keyword form: hosts, ports (one for all, or one each), quoted values', async (t) => {
  const targets = parseTargets("host=a,b port=5432,5433 user=reg password='it\\'s secret' dbname=registry target_session_attrs=primary sslmode=require")
  t.equal(targets.targetSessionAttrs, 'primary')
  t.same(targets.hosts.map((h) => h.name), ['a:5432', 'b:5433'])
  t.equal(targets.hosts[0]?.url, 'postgres://reg:it\'s%20secret@a:5432/registry?sslmode=require')
  t.same(parseTargets('host=a,b port=6000 dbname=d').hosts.map((h) => h.name), ['a:6000', 'b:6000'])
  t.throws(() => parseTargets('host=a,b,c port=1,2'), /3 hosts but 2 ports/)
  t.throws(() => parseTargets('host=a target_session_attrs=leader'), /target_session_attrs=leader is not one of/)
  t.throws(() => parseTargets('host=a krbsrvname=x'), /krbsrvname is not supported/)
  t.throws(() => parseTargets('not a connection string'), /neither a postgres:\/\/ URL nor key=value pairs/)
})

t.test('a list of replicas: split where the next URL starts, or at semicolons', async (t) => {
  t.same(splitConnectionList('postgres://a:1,b:2/d?target_session_attrs=standby, postgres://c/d'), ['postgres://a:1,b:2/d?target_session_attrs=standby', 'postgres://c/d'])
  t.same(splitConnectionList('host=a,b dbname=d; host=c dbname=d'), ['host=a,b dbname=d', 'host=c dbname=d'])
})

t.test('the configuration takes both forms and names a bad one', async (t) => {
  const env = { JWT_SECRET: 'x'.repeat(32) }
  t.equal(loadConfig({ ...env, DATABASE_URL: 'host=a,b dbname=d target_session_attrs=read-write' }).DATABASE_URL, 'host=a,b dbname=d target_session_attrs=read-write')
  t.throws(() => loadConfig({ ...env, DATABASE_URL: 'postgres://a,b/d?target_session_attrs=master' }), /env DATABASE_URL: target_session_attrs=master/)
  t.throws(() => loadConfig({ ...env, DATABASE_URL: 'postgres://a/d', DATABASE_REPLICA_URLS: 'postgres://b/d, postgres://c/d?target_session_attrs=leader' }), /env DATABASE_REPLICA_URLS: target_session_attrs=leader/)
  t.equal(redactUrl('postgres://u:secret@a:1,b:2/d?target_session_attrs=read-write'), 'a:1,b:2 (target_session_attrs=read-write)')
})

t.test('the failover pool', { skip: backend !== 'server' ? 'server backend only' : false }, async (t) => {
  const target = new URL(await createDatabase(t))
  // A refused host: port 1 (tcpmux), which nothing listens on. A port found free and released
  // again could be bound meanwhile by a test file running beside this one.
  const dead = '127.0.0.1:1'
  const url = `postgres://${target.username}@${dead},${target.host}${target.pathname}?target_session_attrs=read-write`
  const db = connect({ url, connectTimeoutMs: 1000 })
  t.teardown(() => db.destroy())
  const { rows } = await sql<{ n: number }>`SELECT 1 AS n`.execute(db)
  t.same(rows, [{ n: 1 }], 'a refused first host is passed over')
  t.equal(failoverOf(db)?.host, target.host, 'the host that fits is served')
  t.equal(failoverOf(db)?.failovers, 0)

  const standbyOnly = connect({ url: url.replace('read-write', 'standby'), connectTimeoutMs: 500 })
  t.teardown(() => standbyOnly.destroy())
  const err = await sql`SELECT 1`.execute(standbyOnly).then(() => undefined, (e: unknown) => e)
  t.match((err as Error).message, /no host fits target_session_attrs=standby: 127\.0\.0\.1:1 \(connect ECONNREFUSED[^)]*\), [^ ]+ \(read-write primary\)/)
  t.same(classifyDbError(err), { kind: 'unavailable' }, 'no host fitting is "database unavailable": a 503 with Retry-After')
})

t.test('the failover pool under a storm of terminated connections: errors of queries (503-class), never an uncaught error', { skip: backend !== 'server' ? 'server backend only' : false }, async (t) => {
  // A connection terminated right after its startup used to reach the pool's role check with no
  // 'error' listener on it (an uncaught exception: the service died in the fault suite's "cut").
  const target = new URL(await createDatabase(t))
  const url = `postgres://${target.username}@${target.host},${target.host}${target.pathname}?target_session_attrs=read-write`
  const db = connect({ url, poolMax: 8, connectTimeoutMs: 3000 })
  t.teardown(() => db.destroy())
  const admin = connect({ url: target.toString(), poolMax: 1 })
  t.teardown(() => admin.destroy())
  let running = true
  const errors: unknown[] = []
  let ok = 0
  const workers = Array.from({ length: 8 }, async () => {
    while (running) {
      await sql`SELECT pg_sleep(0.005)`.execute(db).then(() => { ok++ }, (err: unknown) => { errors.push(err) })
    }
  })
  const database = target.pathname.slice(1)
  for (let i = 0; i < 150; i++) {
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = ${database} AND application_name = 'source-registry' AND pid <> pg_backend_pid()`.execute(admin)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  running = false
  await Promise.all(workers)
  t.comment(`queries: ${ok} answered, ${errors.length} failed`)
  t.ok(errors.length > 0, 'the storm failed queries')
  t.same(errors.filter((e) => classifyDbError(e)?.kind !== 'unavailable').map((e) => (e as Error).message), [], 'each failed as "database unavailable" (503 with Retry-After)')
  const { rows } = await sql<{ n: number }>`SELECT 1 AS n`.execute(db)
  t.same(rows, [{ n: 1 }], 'the pool serves again once the storm is over')
})
