// Applies the SQL of sql/ to a database: one run, one transaction, holding an advisory lock, so
// concurrent runs wait for each other and a failed run leaves the database as it found it.
//
// Two kinds of file, both recorded in schema_migrations with a sha256 checksum:
// - sql/NNN_name.sql, numbered: tables, columns, indexes, data changes. Each is applied once and
//   then frozen: an applied file that was edited is an error. A numbered file rewritten after its
//   release may name the checksums of its earlier texts (`-- supersedes sha256:<hex>`): a
//   database that applied one of those counts it as this text, and its record is rewritten.
//   Issue 33 moved the function bodies out of 003, 004 and 007 to 012 this way; it holds because
//   the repeatable files below, new to such a database, define in the same run what they did.
// - sql/functions/name.sql, repeatable (Flyway's R__ files): functions, triggers and views, one
//   concern a file, written to be run again (CREATE OR REPLACE). Recorded as functions/name.sql,
//   each is applied again whenever its text differs from the one last applied.
//
// The order is one sequence: the numbered files by number; a repeatable file just before the
// numbered file its `-- before: NNN_name.sql` line names (the first one that needs what it
// defines: a CHECK or a generated column that calls a function, a data change that does), or after
// the last numbered file when it names none; repeatable files at one place in name order. So on
// a new database every function exists before its first use. A repeatable file may use only what
// exists before the file it names: on an existing database it also runs at that place, before
// any newer numbered file that is pending.
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Kysely, sql } from 'kysely'
import type { Database } from './database.js'

export const SQL_DIR = fileURLToPath(new URL('../../sql/', import.meta.url))
const LOCK_KEY = 727_001 // arbitrary, constant: "source-registry migrations"
const REPEATABLE = 'functions'

export interface Migration {
  /** 003_sources.sql, or functions/area.sql for a repeatable file. */
  name: string
  text: string
  checksum: string
  repeatable: boolean
  /** Checksums of earlier texts of a numbered file that a database may have recorded instead. */
  supersedes: string[]
}

export interface MigrationResult { applied: string[], skipped: string[] }

async function read (dir: string, pattern: RegExp, prefix = ''): Promise<Array<{ name: string, text: string }>> {
  const names = (await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    // A directory of numbered files alone (an earlier release's, in the tests) has no functions/.
    if (prefix !== '' && err.code === 'ENOENT') return []
    throw err
  })).filter((f) => pattern.test(f)).sort()
  return Promise.all(names.map(async (f) => ({ name: prefix + f, text: await readFile(join(dir, f), 'utf8') })))
}

/** Every file of sql/, in the order migrate applies them. */
export async function listMigrations (dir = SQL_DIR): Promise<Migration[]> {
  const checksum = (text: string) => createHash('sha256').update(text).digest('hex')
  const numbered = (await read(dir, /^\d{3}_[a-z0-9_]+\.sql$/)).map(({ name, text }): Migration => ({
    name, text, checksum: checksum(text), repeatable: false, supersedes: [...text.matchAll(/^-- supersedes sha256:([0-9a-f]{64})$/gm)].map((m) => m[1] as string)
  }))
  const before = new Map<string, Migration[]>()
  for (const { name, text } of await read(join(dir, REPEATABLE), /^[a-z0-9_]+\.sql$/, `${REPEATABLE}/`)) {
    const place = /^-- before: (\S+)/m.exec(text)?.[1] ?? ''
    if (place !== '' && !numbered.some((m) => m.name === place)) throw new Error(`${name} says it runs before ${place}, which is not in ${dir}`)
    before.set(place, [...before.get(place) ?? [], { name, text, checksum: checksum(text), repeatable: true, supersedes: [] }])
  }
  return [...numbered.flatMap((m) => [...before.get(m.name) ?? [], m]), ...before.get('') ?? []]
}

/** Called before each file is applied, so a slow first start can say what it is doing. */
export type OnApply = (name: string) => void

export async function migrate (db: Kysely<Database>, dir = SQL_DIR, onApply: OnApply = () => {}): Promise<MigrationResult> {
  const migrations = await listMigrations(dir)
  // The lock is taken inside the transaction (pg_advisory_xact_lock): a transaction runs on one
  // server connection even behind a transaction-pooling PgBouncer, where a session-level lock and
  // its unlock could land on two different ones and leak the lock.
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx)
    await sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`.execute(trx)
    const recorded = new Map((await trx.selectFrom('schema_migrations').select(['name', 'checksum']).execute()).map((r) => [r.name, r.checksum]))
    const result: MigrationResult = { applied: [], skipped: [] }
    for (const m of migrations) {
      const done = recorded.get(m.name)
      if (done === m.checksum) {
        result.skipped.push(m.name)
        continue
      }
      if (done !== undefined && !m.repeatable) {
        if (!m.supersedes.includes(done)) throw new Error(`migration ${m.name} was changed after it was applied; migrations are append-only, add a new file instead`)
        await trx.updateTable('schema_migrations').set({ checksum: m.checksum }).where('name', '=', m.name).execute()
        result.skipped.push(m.name)
        continue
      }
      onApply(m.name)
      if (result.applied.length === 0) await sql`COMMENT ON TABLE schema_migrations IS 'SQL files of sql/ applied to this database (make migrate): numbered files once, sql/functions/ files whenever they changed.'`.execute(trx)
      await sql.raw(m.text).execute(trx)
      await trx.insertInto('schema_migrations').values({ name: m.name, checksum: m.checksum })
        .onConflict((oc) => oc.column('name').doUpdateSet({ checksum: m.checksum, applied_at: sql`now()` })).execute()
      result.applied.push(m.name)
    }
    return result
  })
}
