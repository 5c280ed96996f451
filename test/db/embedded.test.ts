// The embedded backend's start-up (bootstrap without DATABASE_URL): migrations applied once,
// a JWT secret generated once and kept, the first admin account, data kept across restarts, and
// one process per data directory.
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdir, stat, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { bootstrap } from '../../src/bootstrap.js'
import { loadConfig } from '../../src/config.js'
import { findAccountByEmail } from '../../src/accounts/accounts.repository.js'
import { verifyPassword } from '../../src/accounts/passwords.js'
import { openEmbedded } from '../../src/db/embedded.js'
import { listMigrations } from '../../src/db/migrate.js'
import { backend, createDatabase, tempDir } from '../helper.js'

const quiet = { info: () => {}, warn: () => {} }

if (backend === 'server') {
  t.plan(0, 'embedded backend only (npm test runs it)')
} else {
  // Without a template (test/db/embedded-template.test.ts has the first start from one): the
  // database created and every file of sql/ applied.
  t.test('first start: migrate, generate the secret, create and report the admin; restart: keep all', async (t) => {
    const dir = await tempDir(t, 'sr-embedded-')
    const infos: Array<Record<string, unknown>> = []
    const log = { info: (o: object) => { infos.push(o as Record<string, unknown>) }, warn: () => {} }

    const first = await bootstrap(loadConfig({ DATA_DIR: dir }), log, { template: join(dir, 'no-template') })
    t.equal(first.kind, 'embedded')
    const ready = () => infos.find((i) => i.backend === 'embedded')
    t.same(ready()?.migrationsApplied, (await listMigrations()).map((m) => m.name), 'every migration applied on first start')
    t.match(ready(), { backend: 'embedded', dataDir: dir })
    t.match(infos[0], { firstStart: true, dataDir: dir }, 'the first line says the database is being created')
    t.match(infos[1], { reason: /there is no template/ }, 'and why it does so without the template')
    t.equal(first.config.JWT_SECRET.length, 64, 'a 48-byte secret, base64')
    t.equal((await stat(join(dir, 'jwt-secret'))).mode & 0o777, 0o600, 'readable by the owner only')
    t.ok(first.generatedAdmin, 'the generated admin is reported once')
    const admin = await findAccountByEmail(first.db, first.generatedAdmin?.email as string)
    t.equal(admin?.role, 'admin')
    t.ok(await verifyPassword(first.generatedAdmin?.password as string, admin?.password_hash as string))
    await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES
      ('src_keepmeacrossrestarts', 'kept', 'default', ${admin?.id}::uuid, ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 1,0 0))', 4326), '[2024-01-01Z,2024-02-01Z)')`.execute(first.db)
    await t.rejects(bootstrap(loadConfig({ DATA_DIR: dir }), quiet), /is in use by another process/, 'one process per data directory')
    await first.db.destroy()

    infos.length = 0
    const second = await bootstrap(loadConfig({ DATA_DIR: dir }), log)
    t.teardown(() => second.db.destroy())
    t.match(infos.find((i) => i.backend === 'embedded'), { migrationsApplied: [] }, 'nothing re-applied on a later start')
    t.equal(second.config.JWT_SECRET, first.config.JWT_SECRET, 'tokens survive a restart')
    t.equal(second.generatedAdmin, undefined, 'no second admin')
    const kept = await sql<{ id: string }>`SELECT id FROM sources`.execute(second.db)
    t.same(kept.rows, [{ id: 'src_keepmeacrossrestarts' }], 'data kept across restarts')
  })

  t.test('ADMIN_EMAIL / ADMIN_PASSWORD / ADMIN_ORG and a given JWT_SECRET are used as given', async (t) => {
    const dir = await tempDir(t, 'sr-embedded-')
    const secret = 's'.repeat(40)
    const started = await bootstrap(loadConfig({ DATA_DIR: dir, ADMIN_EMAIL: 'ops@example.org', ADMIN_PASSWORD: 'given password 1', ADMIN_ORG: 'acme', JWT_SECRET: secret }), quiet)
    t.teardown(() => started.db.destroy())
    t.equal(started.generatedAdmin, undefined, 'nothing to print: the password was given')
    t.equal(started.config.JWT_SECRET, secret)
    const admin = await findAccountByEmail(started.db, 'ops@example.org')
    t.match(admin, { role: 'admin', organisation: 'acme' })
    t.ok(await verifyPassword('given password 1', admin?.password_hash as string))
  })

  t.test('after kill -9 the next process takes the data directory over at once, with nothing acknowledged lost', async (t) => {
    const dir = await createDatabase(t)
    // A child opens the directory, inserts a source, says so once it is committed, then waits.
    const child = spawn(process.execPath, ['--input-type=module', '-e', `
      import { sql } from 'kysely'
      import { openEmbedded } from './dist/db/embedded.js'
      const { db } = await openEmbedded(${JSON.stringify(dir)})
      await sql\`INSERT INTO accounts (id, email, password_hash, role, organisation) VALUES ('00000000-0000-0000-0000-000000000001', 'crash@example.org', 'scrypt$x', 'editor', 'o')\`.execute(db)
      await sql\`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES ('src_acknowledgedbeforecrash', 'k', 'o', '00000000-0000-0000-0000-000000000001', ST_MakeEnvelope(0, 0, 1, 1, 4326), '[2024-01-01Z,2024-02-01Z)')\`.execute(db)
      process.stdout.write('committed\\n')
      setInterval(() => {}, 1000)
    `], { stdio: ['ignore', 'pipe', 'inherit'] })
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => { if (d.toString().includes('committed')) resolve() })
      child.on('exit', (code) => reject(new Error(`child exited ${code}`)))
    })
    await t.rejects(openEmbedded(dir), /is in use by another process \(pid \d+: a running service or CLI\)/, 'a live owner keeps the directory')
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    const started = Date.now()
    const reopened = await openEmbedded(dir)
    t.teardown(() => reopened.db.destroy())
    // Taken over from the dead pid on the first try (the lock has no staleness period to wait
    // out); the time is PGlite's start, which a loaded machine stretches, so it is printed only.
    t.comment(`reopened in ${Date.now() - started} ms`)
    t.equal(reopened.tookOverFromPid, child.pid, 'the dead owner is named: taken over at once')
    const rows = await sql<{ id: string }>`SELECT id FROM sources`.execute(reopened.db)
    t.same(rows.rows, [{ id: 'src_acknowledgedbeforecrash' }], 'the committed source survived the crash')
  })

  t.test('a lock whose pid now belongs to another process is taken over; a lock of another host is not', async (t) => {
    const dir = await tempDir(t, 'sr-lock-')
    await mkdir(join(dir, '.lock'))
    // pid 1 is alive, but it did not start at this time: its pid was reused.
    await writeFile(join(dir, '.lock', 'owner.json'), JSON.stringify({ pid: 1, started: '1', host: hostname() }))
    const opened = await openEmbedded(dir)
    t.equal(opened.tookOverFromPid, 1)
    // Kysely ends the pool (and so releases the lock) only once it has been used.
    await sql`SELECT 1`.execute(opened.db)
    await opened.db.destroy()
    await mkdir(join(dir, '.lock'))
    await writeFile(join(dir, '.lock', 'owner.json'), JSON.stringify({ pid: 999999, started: '1', host: 'another-host' }))
    await t.rejects(openEmbedded(dir), /in use by another process \(pid 999999 on another-host/)
  })
}
