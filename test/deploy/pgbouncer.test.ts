// Through Debian's PgBouncer (1.18) in transaction pooling mode with its defaults (no
// ignore_startup_parameters), as ops run PostgreSQL in production: with DB_POOL_MODE=transaction
// migrations apply (twice at once, and again), an account is created with the CLI, and 16
// concurrent POST+GET loops are all answered 201/200, on a database whose TimeZone is not UTC.
// With DB_POOL_MODE=session the CLI says what to set.
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import { listMigrations } from '../../src/db/migrate.js'
import { openDatabase } from '../../src/db/open.js'
import { pgbouncerBinary, startPgBouncer } from '../../scripts/pgbouncer.mjs'
import { adminQuery, backend, collection, createDatabase, feature, startService, targetConfig } from '../helper.js'

if (backend === 'embedded') {
  t.plan(0, 'server backend only (npm run test:server)')
} else if (pgbouncerBinary() === undefined && process.env.CI !== 'true') {
  t.plan(0, 'pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)')
} else {
  await throughPgBouncer()
}

async function throughPgBouncer (): Promise<void> {
  const direct = new URL(await createDatabase(t, { empty: true }))
  const name = direct.pathname.slice(1)
  await adminQuery(`ALTER DATABASE ${name} SET timezone = 'America/St_Johns'`)
  const bouncer = await startPgBouncer(direct.toString())
  t.teardown(() => bouncer.stop())
  const pooled = new URL(bouncer.pooled(direct.toString()))
  const cli = async (args: string[], mode: 'transaction' | 'session' = 'transaction', input?: string) => {
    const child = promisify(execFile)(process.execPath, ['dist/cli.js', ...args], { env: { PATH: process.env.PATH, DATABASE_URL: pooled.toString(), DB_POOL_MODE: mode } })
    if (input !== undefined) { child.child.stdin?.end(input) }
    return child.then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }), (err: { code: number, stdout: string, stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }))
  }

  t.test('DB_POOL_MODE=session through a transaction pooler: the error says what to set', async (t) => {
    const r = await cli(['migrate'], 'session')
    t.not(r.code, 0)
    t.match(r.stderr, /unsupported startup parameter.*set DB_POOL_MODE=transaction/)
  })

  t.test('migrations through the pooler: two at once, then again', async (t) => {
    const [first, second] = await Promise.all([cli(['migrate']), cli(['migrate'])])
    t.same([first.code, second.code], [0, 0], `${first.stderr}${second.stderr}`)
    const again = await cli(['migrate'])
    t.equal(again.code, 0, again.stderr)
    t.match(again.stdout, /nothing to apply|up to date|applied no/i)
    const { db } = await openDatabase(targetConfig(direct.toString()), { poolMax: 1 })
    t.teardown(() => db.destroy())
    const rows = await sql<{ n: string }>`SELECT count(*) AS n FROM schema_migrations`.execute(db)
    t.equal(Number(rows.rows[0]?.n), (await listMigrations()).length, 'each file applied once')
    const locks = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(db)
    t.equal(Number(locks.rows[0]?.n), 0, 'no advisory lock left behind on a pooled server connection')
  })

  t.test('the service in DB_POOL_MODE=session through the pooler: 503, and the log says what to set', async (t) => {
    const service = await startService(t, pooled.toString(), { DB_POOL_MODE: 'session' })
    const res = await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'nobody@example.org', password: 'whatever password' }) })
    t.equal(res.status, 503)
    t.match(await res.json(), { status: 503, code: 'SERVICE_UNAVAILABLE' })
    t.match(await service.waitFor(/database unavailable/, 10_000), /set DB_POOL_MODE=transaction/)
  })

  t.test('16 concurrent POST+GET loops through the pooler: every answer 201/200, times as sent', async (t) => {
    const password = 'pooled password 1234'
    const added = await cli(['account', 'add', '--email', 'pooled@example.org', '--org', 'org-p', '--role', 'editor', '--password-stdin'], 'transaction', password)
    t.equal(added.code, 0, added.stderr)
    const service = await startService(t, pooled.toString(), { DB_POOL_MODE: 'transaction' })
    const token = ((await (await fetch(`${service.base}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'pooled@example.org', password }) })).json()) as { token: string }).token
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const statuses = new Map<number, number>()
    const starts = new Set<string>()
    await Promise.all(Array.from({ length: 16 }, async (_, loop) => {
      for (let i = 0; i < 10; i++) {
        const posted = await fetch(`${service.base}/sources`, { method: 'POST', headers, body: JSON.stringify(collection(feature(`p-${loop}-${i}`, { start: '2024-03-01T12:30:00Z', end: '2024-04-01T00:00:00Z' }))) })
        statuses.set(posted.status, (statuses.get(posted.status) ?? 0) + 1)
        if (posted.status !== 201) continue
        const id = ((await posted.json()) as { sources: Array<{ id: string }> }).sources[0]?.id as string
        const got = await fetch(`${service.base}/sources/?id=${id}`, { headers })
        statuses.set(got.status, (statuses.get(got.status) ?? 0) + 1)
        if (got.status === 200) starts.add(((await got.json()) as { properties: { start_at: string } }).properties.start_at)
      }
    }))
    t.same(Object.fromEntries(statuses), { 200: 160, 201: 160 })
    t.same([...starts], ['2024-03-01T12:30:00Z'], 'the database\'s TimeZone (America/St_Johns) changes nothing')
    const page = await fetch(`${service.base}/collections/sources/items?datetime=2024-03-01T12:00:00Z/2024-03-01T12:30:00Z&limit=1`, { headers })
    t.equal(((await page.json()) as { numberMatched: number }).numberMatched, 160, 'datetime filters in UTC')
  })
}
