// The migrator: applies every file once, is idempotent, serialises concurrent runs with its
// advisory lock, and refuses an applied file that was edited.
import t from 'tap'
import { cp, appendFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { listMigrations, migrate, SQL_DIR } from '../../src/db/migrate.js'
import { openEmbedded } from '../../src/db/embedded.js'
import { backend, createDatabase, directDb, tempDir } from '../helper.js'

const files = (await listMigrations()).map((m) => m.name)

t.test('applies every migration once; a second run applies nothing', async (t) => {
  const db = await directDb(t, await createDatabase(t, { empty: true }))
  t.same(await migrate(db), { applied: files, skipped: [] })
  t.same(await migrate(db), { applied: [], skipped: files })
  const rows = await db.selectFrom('schema_migrations').select('name').orderBy('name').execute()
  t.same(rows.map((r) => r.name), files)
  const ext = await sql<{ extname: string }>`SELECT extname FROM pg_extension WHERE extname IN ('postgis', 'btree_gist') ORDER BY 1`.execute(db)
  t.same(ext.rows.map((r) => r.extname), ['btree_gist', 'postgis'])
})

t.test('two concurrent runs: both succeed, each file is applied exactly once', async (t) => {
  const target = await createDatabase(t, { empty: true })
  // Server: two pools, two sessions, serialised by the advisory lock. Embedded: one process owns
  // the data directory (a second open is refused), so the concurrency is within that process.
  const first = await directDb(t, target)
  const second = backend === 'server' ? await directDb(t, target) : first
  if (backend === 'embedded') await t.rejects(openEmbedded(target), /is in use by another process/)
  const [a, b] = await Promise.all([migrate(first), migrate(second)])
  t.same([...a.applied, ...b.applied].sort(), files, 'every file applied by exactly one of them')
  t.same([...a.skipped, ...b.skipped].sort(), files)
})

t.test('an applied migration that was edited is refused; a new file is applied', async (t) => {
  const db = await directDb(t, await createDatabase(t, { empty: true }))
  const dir = await tempDir(t, 'sr-migrations-')
  await cp(SQL_DIR, dir, { recursive: true })
  await migrate(db, dir)
  await appendFile(join(dir, '999_extra.sql'), 'CREATE TABLE extra (x int);')
  t.same((await migrate(db, dir)).applied, ['999_extra.sql'])
  await appendFile(join(dir, '002_accounts.sql'), '\n-- edited\n')
  await t.rejects(migrate(db, dir), /002_accounts\.sql was changed after it was applied/)
})

t.test('a failing migration leaves nothing half-applied', async (t) => {
  const db = await directDb(t, await createDatabase(t, { empty: true }))
  const dir = await tempDir(t, 'sr-migrations-')
  await cp(SQL_DIR, dir, { recursive: true })
  await appendFile(join(dir, '998_broken.sql'), 'CREATE TABLE half (x int); SELECT no_such_function();')
  await t.rejects(migrate(db, dir), /no_such_function/)
  const half = await sql<{ t: string | null }>`SELECT to_regclass('half')::text AS t`.execute(db)
  t.equal(half.rows[0]?.t, null, 'the broken file\'s table was rolled back')
  t.notOk((await db.selectFrom('schema_migrations').select('name').execute()).some((r) => r.name === '998_broken.sql'))
})
