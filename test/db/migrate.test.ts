// The migrator: applies every numbered file once and a repeatable file whenever it changed, in
// the stated order, is idempotent, serialises concurrent runs with its advisory lock, refuses an
// applied numbered file that was edited (unless it names that text as superseded), and a failed
// run leaves nothing of itself behind. test/db/upgrade.test.ts: an upgraded database equals a new one.
import t from 'tap'
import { cp, appendFile, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'kysely'
import { listMigrations, migrate, SQL_DIR } from '../../src/db/migrate.js'
import { openEmbedded } from '../../src/db/embedded.js'
import { backend, createDatabase, directDb, tempDir } from '../helper.js'

const files = (await listMigrations()).map((m) => m.name)
const checksums = (await listMigrations()).map((m) => m.checksum)

t.test('applies every migration once; a second run applies nothing', async (t) => {
  const db = await directDb(t, await createDatabase(t, { empty: true }))
  t.same(await migrate(db), { applied: files, skipped: [] })
  t.same(await migrate(db), { applied: [], skipped: files })
  const rows = await db.selectFrom('schema_migrations').select('name').execute()
  t.same(rows.map((r) => r.name).sort(), [...files].sort())
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
  t.same([a.applied, b.applied].sort((x, y) => x.length - y.length), [[], files], 'one run applied every file, the other none')
  t.same([a.skipped, b.skipped].sort((x, y) => y.length - x.length), [files, []])
})

t.test('a repeatable file drops no function, procedure, view, table or type: only numbered files do (sql/README.md)', async (t) => {
  for (const m of (await listMigrations()).filter((m) => m.repeatable)) {
    t.notMatch(m.text.replace(/--.*$/gm, ''), /\bDROP\s+(FUNCTION|PROCEDURE|VIEW|MATERIALIZED\s+VIEW|TABLE|TYPE)\b/i, m.name)
  }
})

t.test('a repeatable file runs just before the numbered file its header names, or after them all', async (t) => {
  const at = (name: string) => files.indexOf(name)
  t.equal(at('functions/period_window.sql'), at('003_sources.sql') - 1, 'the period window before the table whose constraint calls it')
  t.equal(at('functions/area.sql'), at('004_source_area.sql') - 1, 'the area before the generated column')
  t.equal(at('functions/conflict_rule.sql'), at('008_source_conflict_pairs.sql') - 1, 'the rule before the file that fills the pairs with it')
  t.ok(files.slice(at('functions/conflict_view.sql')).every((f) => f.startsWith('functions/')), 'the view on the pairs after every numbered file')
  t.ok(at('functions/tile_changes.sql') > at('016_tile_changes.sql'), 'the tile change triggers after their table')
  t.ok(files.slice(at('functions/source_versions.sql')).every((f) => f.startsWith('functions/')), 'the history triggers after every numbered file (their table is 017\'s)')
  const dir = await tempDir(t, 'sr-migrations-')
  await cp(SQL_DIR, dir, { recursive: true })
  await writeFile(join(dir, 'functions', 'zz_misplaced.sql'), '-- before: 099_none.sql\nSELECT 1;\n')
  await t.rejects(listMigrations(dir), /functions\/zz_misplaced\.sql says it runs before 099_none\.sql, which is not in/)
})

// Issue 33: code lives in sql/functions/, so that what runs today reads in one place.
t.test('functions, triggers and views are defined in sql/functions/ only, each in one file', async (t) => {
  const defined = new Map<string, string[]>()
  for (const m of await listMigrations()) {
    const code = m.text.replace(/--.*$/gm, '')
    for (const [, verb, kind, name, args] of code.matchAll(/\b(CREATE(?:\s+OR\s+REPLACE)?|ALTER)\s+(FUNCTION|PROCEDURE|TRIGGER|VIEW)\s+(\w+)\s*(\([^)]*\))?/gi)) {
      const key = `${verb?.toUpperCase().startsWith('ALTER') === true ? 'ALTER ' : ''}${kind?.toUpperCase()} ${name}${args ?? ''}`
      defined.set(key, [...defined.get(key) ?? [], m.name])
    }
  }
  t.ok(defined.size >= 25, `${defined.size} definitions found`)
  t.same([...defined].filter(([, where]) => where.length > 1 || !where.every((w) => w.startsWith('functions/'))), [])
})

t.test('numbered files are frozen, repeatable files are applied again when they change', async (t) => {
  const db = await directDb(t, await createDatabase(t, { empty: true }))
  const dir = await tempDir(t, 'sr-migrations-')
  await cp(SQL_DIR, dir, { recursive: true })
  await migrate(db, dir)
  await appendFile(join(dir, '999_extra.sql'), 'CREATE TABLE extra (x int);')
  t.same((await migrate(db, dir)).applied, ['999_extra.sql'], 'a new numbered file is applied')

  const view = join(dir, 'functions', 'conflict_view.sql')
  await writeFile(view, (await readFile(view, 'utf8')).replace("IS 'The source seen from.'", "IS 'The source the pair is seen from.'"))
  t.same((await migrate(db, dir)).applied, ['functions/conflict_view.sql'], 'an edited repeatable file is applied again, alone')
  const comment = await sql<{ c: string }>`SELECT col_description('source_conflicts'::regclass, 1) AS c`.execute(db)
  t.equal(comment.rows[0]?.c, 'The source the pair is seen from.')
  t.same((await migrate(db, dir)).applied, [], 'and once only')

  // A database that applied the released text of a file rewritten since (it names that text's
  // checksum): accepted, and its record rewritten. Any other earlier text: refused.
  const [rewritten] = (await listMigrations(dir)).filter((m) => m.supersedes.length > 0)
  if (rewritten === undefined) throw new Error('no numbered file names a superseded text')
  await db.updateTable('schema_migrations').set({ checksum: rewritten.supersedes[0] as string }).where('name', '=', rewritten.name).execute()
  t.same((await migrate(db, dir)).applied, [], `${rewritten.name} as released counts as applied`)
  const record = await db.selectFrom('schema_migrations').select('checksum').where('name', '=', rewritten.name).executeTakeFirst()
  t.equal(record?.checksum, rewritten.checksum, 'its record now holds today\'s checksum')
  await appendFile(join(dir, '002_accounts.sql'), '\n-- edited\n')
  await t.rejects(migrate(db, dir), /002_accounts\.sql was changed after it was applied/)
})

t.test('a failing run leaves nothing of itself applied', async (t) => {
  const db = await directDb(t, await createDatabase(t))
  const dir = await tempDir(t, 'sr-migrations-')
  await cp(SQL_DIR, dir, { recursive: true })
  await appendFile(join(dir, '997_fine.sql'), 'CREATE TABLE fine (x int);')
  await appendFile(join(dir, '998_broken.sql'), 'CREATE TABLE half (x int); SELECT no_such_function();')
  await appendFile(join(dir, 'functions', 'conflict_view.sql'), '\n-- edited\n')
  await t.rejects(migrate(db, dir), /no_such_function/)
  const left = await sql<{ fine: string | null, half: string | null }>`SELECT to_regclass('fine')::text AS fine, to_regclass('half')::text AS half`.execute(db)
  t.same(left.rows[0], { fine: null, half: null }, 'the tables of both files were rolled back')
  const recorded = await db.selectFrom('schema_migrations').select(['name', 'checksum']).execute()
  t.same(new Map(recorded.map((r) => [r.name, r.checksum])), new Map(files.map((name, i) => [name, checksums[i]])), 'the records are as before the run')
})
