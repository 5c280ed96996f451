// An upgraded database equals a new one. A database at an earlier schema (sql/ as git commit
// 003a0b0, the last release, had it, or 481d120, applied as their migrator did), migrated
// with today's sql/, must have the same schema as a new database migrated with today's sql/:
// functions with their settings and bodies, triggers, views, tables, columns, constraints,
// indexes, comments and extensions, read from the catalogs on both backends, and on the server
// backend also pg_dump --schema-only (schema_migrations left out). The earlier files come from
// git history, so no second copy of their function bodies lives in the repository; the test
// needs a clone with that history (not a shallow one).
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { type Kysely, sql } from 'kysely'
import { listMigrations, migrate, SQL_DIR } from '../../src/db/migrate.js'
import type { Database } from '../../src/db/database.js'
import { backend, createDatabase, directDb, tempDir } from '../helper.js'
import { CATALOG, type Schema, schemaOf } from './schema.js'

const LAST_RELEASE = '003a0b0'
const REPO = join(SQL_DIR, '..')
const PG_DUMP = '/usr/lib/postgresql/15/bin/pg_dump'

/** sql/ as it was at a commit: its numbered files, in order, read from git. */
function sqlAt (commit: string): Array<{ name: string, text: string }> {
  const git = (...args: string[]) => execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8', maxBuffer: 1 << 24 })
  let names: string[]
  try {
    names = git('ls-tree', '--name-only', commit, 'sql/').split('\n').filter((p) => /^sql\/\d{3}_[a-z0-9_]+\.sql$/.test(p))
  } catch (err) {
    throw new Error(`this test reads sql/ as commit ${commit} had it from git history, which this clone lacks (git fetch --unshallow): ${(err as Error).message}`)
  }
  return names.sort().map((p) => ({ name: p.slice(4), text: git('show', `${commit}:${p}`) }))
}

/** sql/ as it was at a commit, numbered and repeatable files, written to a directory of its own. */
async function sqlDirAt (t: Test, commit: string): Promise<string> {
  const dir = await tempDir(t, `sr-sql-${commit}-`)
  const git = (...args: string[]) => execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8', maxBuffer: 1 << 24 })
  for (const path of git('ls-tree', '-r', '--name-only', commit, 'sql/').split('\n').filter((p) => p.endsWith('.sql'))) {
    const file = join(dir, path.slice(4))
    await mkdir(dirname(file), { recursive: true })
    await writeFile(file, git('show', `${commit}:${path}`))
  }
  return dir
}

/** What that release's migrator did: each file in a transaction of its own, recorded with its sha256. */
async function applyAsReleased (db: Kysely<Database>, files: Array<{ name: string, text: string }>): Promise<void> {
  await sql`CREATE TABLE schema_migrations (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`.execute(db)
  await sql`COMMENT ON TABLE schema_migrations IS 'SQL files of sql/ applied to this database (make migrate).'`.execute(db)
  for (const f of files) {
    await db.transaction().execute(async (trx) => {
      await sql.raw(f.text).execute(trx)
      await trx.insertInto('schema_migrations').values({ name: f.name, checksum: createHash('sha256').update(f.text).digest('hex') }).execute()
    })
  }
}

/** pg_dump --schema-only without schema_migrations, cut into its entries, sorted. */
function dumpOf (url: string): string[] {
  const text = execFileSync(PG_DUMP, ['--schema-only', '--exclude-table=schema_migrations', `--dbname=${url}`], { encoding: 'utf8', maxBuffer: 1 << 26 })
  // \restrict and \unrestrict carry a random key per dump (pg_dump 15.14 and later).
  return text.replace(/^\\(un)?restrict .*$/gm, '').split(/\n(?=--\n-- Name: )/).map((s) => s.trim()).sort()
}

const canDump = backend === 'server' && existsSync(PG_DUMP)
const today = await listMigrations()

// A new database: the suite's template, which `migrate` made from an empty one (scripts/test.mjs).
let fresh: { schema: Schema, dump?: string[] } | undefined
t.test('a new database', async (t) => {
  const target = await createDatabase(t)
  const db = await directDb(t, target)
  t.same((await migrate(db)).applied, [], 'migrated already')
  fresh = { schema: await schemaOf(db), dump: canDump ? dumpOf(target) : undefined }
  t.ok(fresh.schema.functions?.some((f) => f.includes('lonlat_conflict_overlap_m2')), 'has the conflict rule')
})

/** A database at `commit`'s sql/, upgraded with today's; `between` runs before the upgrade. */
async function upgradeFrom (t: Test, commit: string, between: (db: Kysely<Database>) => Promise<void> = async () => {}) {
  const target = await createDatabase(t, { empty: true })
  const db = await directDb(t, target)
  const files = sqlAt(commit)
  await applyAsReleased(db, files)
  await between(db)
  const result = await migrate(db)
  t.same(result.applied, today.filter((m) => m.repeatable || !files.some((f) => f.name === m.name)).map((m) => m.name),
    'applies the numbered files it lacked and every repeatable file')
  const recorded = await db.selectFrom('schema_migrations').select(['name', 'checksum']).execute()
  t.same(new Map(recorded.map((r) => [r.name, r.checksum])), new Map(today.map((m) => [m.name, m.checksum])), 'records today\'s checksum of every file')
  const schema = await schemaOf(db)
  for (const kind of Object.keys(CATALOG)) t.same(schema[kind], fresh?.schema[kind], `${kind}: as on a new database`)
  if (canDump) t.same(dumpOf(target), fresh?.dump, 'pg_dump --schema-only: as on a new database')
  else t.comment(`pg_dump comparison: server backend only (${backend})`)
  t.same((await migrate(db)).applied, [], 'a second run applies nothing')
  return db
}

t.test(`a database at the last release (${LAST_RELEASE}) upgrades to the new schema`, async (t) => {
  await upgradeFrom(t, LAST_RELEASE)
})

// Before the pairs were stored (481d120: sql/001 to 007, the rule decided by the view at every
// read): today's sql/008 runs on it, after the repeatable files it needs, and fills the pairs.
// Its functions differ from today's, so a repeatable file not applied on upgrade shows in the
// schema here; at the last release the code is today's, and only the list of applied files shows it.
t.test('a database from before the stored conflicts (481d120) upgrades too, its pairs filled', async (t) => {
  const db = await upgradeFrom(t, '481d120', async (db) => {
    await sql`INSERT INTO accounts (id, email, password_hash, role, organisation) VALUES ('00000000-0000-0000-0000-000000000001', 'a@example.org', 'scrypt$x', 'editor', 'org-a')`.execute(db)
    await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES
      ('src_0000000000000a', 'a', 'org-a', '00000000-0000-0000-0000-000000000001', ST_MakeEnvelope(10, 50, 10.01, 50.01, 4326), '[2024-01-01Z,2025-01-01Z)'),
      ('src_0000000000000b', 'b', 'org-a', '00000000-0000-0000-0000-000000000001', ST_MakeEnvelope(10.005, 50, 10.015, 50.01, 4326), '[2024-06-01Z,2025-06-01Z)')`.execute(db)
  })
  const pairs = await sql<{ source_id: string, other_id: string }>`SELECT source_id, other_id FROM source_conflicts ORDER BY 1`.execute(db)
  t.same(pairs.rows, [{ source_id: 'src_0000000000000a', other_id: 'src_0000000000000b' }, { source_id: 'src_0000000000000b', other_id: 'src_0000000000000a' }], 'the pair of the two overlapping sources, both ways')
})

// Before the versions (issue 34): main at 597a7e7, numbered and repeatable files, applied by the
// migrator of its time (today's, which reads the same layout). Its stored sources each get their
// version 1, recorded as created when they were.
t.test('a database from before the versions (597a7e7) upgrades: every stored source gets its version 1', async (t) => {
  const target = await createDatabase(t, { empty: true })
  const db = await directDb(t, target)
  await migrate(db, await sqlDirAt(t, '597a7e7'))
  await sql`INSERT INTO accounts (id, email, password_hash, role, organisation) VALUES ('00000000-0000-0000-0000-000000000001', 'a@example.org', 'scrypt$x', 'editor', 'org-a')`.execute(db)
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period, created_at) VALUES
    ('src_0000000000000a', 'a', 'org-a', '00000000-0000-0000-0000-000000000001', ST_MakeEnvelope(10, 50, 10.01, 50.01, 4326), '[2024-01-01Z,2025-01-01Z)', '2024-02-01Z'),
    ('src_0000000000000b', 'b', 'org-a', '00000000-0000-0000-0000-000000000001', ST_MakeEnvelope(10.005, 50, 10.015, 50.01, 4326), '[2024-06-01Z,2025-06-01Z)', '2024-03-01Z')`.execute(db)
  const result = await migrate(db)
  t.ok(result.applied.includes('017_source_versions.sql') && result.applied.includes('functions/source_versions.sql'), 'applies 017 and the history triggers')
  const schema = await schemaOf(db)
  for (const kind of Object.keys(CATALOG)) t.same(schema[kind], fresh?.schema[kind], `${kind}: as on a new database`)
  const rows = await sql<{ id: string, version: number, same: boolean }>`SELECT id, version, updated_at = created_at AS same FROM sources ORDER BY id`.execute(db)
  t.same(rows.rows, [{ id: 'src_0000000000000a', version: 1, same: true }, { id: 'src_0000000000000b', version: 1, same: true }], 'version 1, last changed when created')
  const versions = await sql<{ source_id: string, version: number, operation: string, at: boolean }>`
    SELECT v.source_id, v.version, v.operation, v.recorded_at = s.created_at AS at FROM source_versions AS v JOIN sources AS s ON s.id = v.source_id ORDER BY 1`.execute(db)
  t.same(versions.rows, [{ source_id: 'src_0000000000000a', version: 1, operation: 'create', at: true }, { source_id: 'src_0000000000000b', version: 1, operation: 'create', at: true }], 'their version 1 in source_versions')
  const pairs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM source_conflict_pairs`.execute(db)
  t.equal(pairs.rows[0]?.n, 2, 'their conflict kept')
})

// The first events (main at 23d94c4): one trigger function per table, events_sources_changed and
// events_conflict_pairs_changed, which the triggers call. sql/020 drops them (a repeatable file
// drops nothing) before functions/events.sql points the triggers at today's functions: the
// upgraded database has the same schema as a new one and still writes events.
t.test('a database with the first events (23d94c4) upgrades: their old trigger functions gone, events still written', async (t) => {
  const target = await createDatabase(t, { empty: true })
  const db = await directDb(t, target)
  await migrate(db, await sqlDirAt(t, '23d94c4'))
  const old = sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_proc WHERE proname IN ('events_sources_changed', 'events_conflict_pairs_changed')`
  t.equal((await old.execute(db)).rows[0]?.n, 2, 'has the old trigger functions')
  const result = await migrate(db)
  t.ok(result.applied.includes('020_drop_replaced_event_functions.sql') && result.applied.includes('functions/events.sql'), 'applies 020 and the event triggers')
  t.equal((await old.execute(db)).rows[0]?.n, 0, 'the old trigger functions are gone')
  const schema = await schemaOf(db)
  for (const kind of Object.keys(CATALOG)) t.same(schema[kind], fresh?.schema[kind], `${kind}: as on a new database`)
  await sql`INSERT INTO accounts (id, email, password_hash, role, organisation) VALUES ('00000000-0000-0000-0000-000000000001', 'a@example.org', 'scrypt$x', 'editor', 'org-a')`.execute(db)
  await sql`INSERT INTO sources (id, feature_id, organisation, created_by, geom, period) VALUES
    ('src_0000000000000a', 'a', 'org-a', '00000000-0000-0000-0000-000000000001', ST_MakeEnvelope(10, 50, 10.01, 50.01, 4326), '[2024-01-01Z,2025-01-01Z)'),
    ('src_0000000000000b', 'b', 'org-a', '00000000-0000-0000-0000-000000000001', ST_MakeEnvelope(10.005, 50, 10.015, 50.01, 4326), '[2024-06-01Z,2025-06-01Z)')`.execute(db)
  const events = await sql<{ type: string, n: number }>`SELECT type, count(*)::int AS n FROM events GROUP BY type ORDER BY type`.execute(db)
  t.same(events.rows, [{ type: 'conflict.started', n: 2 }, { type: 'source.created', n: 2 }], 'an insert writes its events')
})
